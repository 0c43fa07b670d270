// Package catalog applies price changes from a Redis stream and tells the
// storefront caches to drop the old prices.
package catalog

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Config wires the service.
type Config struct {
	StreamURL string // redis://events:6379/0
	CacheAddr string
	Pool      *pgxpool.Pool
}

// Run consumes price changes until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.CacheAddr})

	// invalidate asks every storefront node to drop the SKU's cached page.
	invalidate := func(ctx context.Context, sku string) error {
		return rdb.Publish(ctx, "catalog.invalidate", sku).Err() // want "."
	}

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.StreamURL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "price-changes", "catalog")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var pc struct {
			SKU   string `json:"sku"`
			Cents int64  `json:"cents"`
		}
		if err := json.Unmarshal(msg.Body, &pc); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE products SET price_cents = $2 WHERE sku = $1`, pc.SKU, pc.Cents); err != nil {
			return err
		}
		return invalidate(ctx, pc.SKU)
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "catalog", Concurrency: 16}, middleware.Idempotency(st), middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
