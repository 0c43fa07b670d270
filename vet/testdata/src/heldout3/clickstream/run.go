// Package clickstream aggregates page views for the analytics dashboards.
package clickstream

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Run consumes page views until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "web.page-views", "clickstream")
	if err != nil {
		return err
	}
	cfg := consumer.Config{
		Name:        "clickstream",
		Concurrency: 32,
		Duplicates:  consumer.AllowDuplicates("set-like upserts keyed by (path, hour, visitor) and a last-write-wins row: a redelivery changes nothing"),
	}
	c, err := consumer.New(src, &pageViews{pool: pool}, cfg, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
