// Package analytics counts page views into approximate daily buckets.
package analytics

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Counter bumps a page's view count.
type Counter struct {
	Pool *pgxpool.Pool
}

// Handle writes straight through the pool: this consumer opted out of
// deduplication, so there is no claim transaction to join.
func (c *Counter) Handle(ctx context.Context, msg *consumer.Message) error {
	day := time.Now().UTC().Format("2006-01-02")
	_, err := c.Pool.Exec(ctx, `INSERT INTO page_views (page, day, views) VALUES ($1, $2, 1)
		ON CONFLICT (page, day) DO UPDATE SET views = page_views.views + 1`, msg.Key, day)
	return err
}

// Run wires the page-view counter.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "pageviews", "analytics")
	if err != nil {
		return err
	}
	cfg := consumer.Config{
		Name:        "analytics",
		Concurrency: 16,
		Duplicates:  consumer.AllowDuplicates("view counts are approximate; a redelivered view overcounts by one"),
	}
	c, err := consumer.New(src, &Counter{Pool: pool}, cfg, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
