// Package catalogsync mirrors the supplier catalog into the shop database.
package catalogsync

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

const schema = `
CREATE TABLE IF NOT EXISTS products (
	sku      text PRIMARY KEY,
	title    text NOT NULL,
	category text NOT NULL,
	active   boolean NOT NULL,
	synced_at timestamptz NOT NULL DEFAULT now()
)`

// Run migrates, then consumes catalog changes until ctx is done, pruning
// inactive products once a day.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	if _, err := pool.Exec(ctx, schema); err != nil {
		return fmt.Errorf("catalogsync: migrate: %w", err)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "supplier.catalog", "catalogsync")
	if err != nil {
		return err
	}
	go prune(ctx, pool, log)
	c, err := consumer.New(src, postgres.HandlerFunc(syncProduct), consumer.Config{Name: "catalogsync"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

func prune(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) {
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := pool.Exec(ctx, `DELETE FROM products WHERE NOT active AND synced_at < now() - interval '90 days'`); err != nil {
				log.Warn("catalogsync: prune", "err", err)
			}
		}
	}
}
