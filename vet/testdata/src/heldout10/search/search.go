// Package search keeps the listing table in step with listing events from
// Kafka and refreshes the search index entry of each changed listing.
package search

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	Brokers string
	Pool    *pgxpool.Pool
	Log     *slog.Logger
}

// Run consumes listing events until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.Brokers)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "listings", "listing-search")
	if err != nil {
		return err
	}

	// reindex recomputes the listing's search document from its row; slow
	// (tsvector over the description), so it runs off the handler's path.
	reindex := func(ctx context.Context, id string) {
		tx, ok := postgres.Tx(ctx)
		if !ok {
			return
		}
		if _, err := tx.Exec(ctx, `UPDATE listing_search SET doc = to_tsvector('simple', l.title || ' ' || l.description) FROM listings l WHERE l.id = $1 AND listing_search.id = l.id`, id); err != nil {
			cfg.Log.Warn("reindex failed", "listing", id, "err", err)
		}
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var l struct {
			ID          string `json:"id"`
			Title       string `json:"title"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(msg.Body, &l); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO listings (id, title, description) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, description = EXCLUDED.description`, l.ID, l.Title, l.Description); err != nil {
			return err
		}
		go reindex(ctx, l.ID) // want "."
		return nil
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "listing-search", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
