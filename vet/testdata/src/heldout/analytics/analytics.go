// Package analytics keeps the dashboards' counters: page views, which are
// approximate by nature, and order revenue, which must be exact.
package analytics

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

type counters struct {
	pool *pgxpool.Pool
}

// countView bumps the hourly page-view counter. A duplicate delivery counts a
// view twice, which the dashboard tolerates.
func (c *counters) countView(ctx context.Context, msg *consumer.Message) error {
	var v struct {
		Path string `json:"path"`
		Hour string `json:"hour"`
	}
	if err := json.Unmarshal(msg.Body, &v); err != nil {
		return consumer.Permanent(err)
	}
	_, err := c.pool.Exec(ctx,
		`INSERT INTO page_views (path, hour, n) VALUES ($1, $2, 1)
		 ON CONFLICT (path, hour) DO UPDATE SET n = page_views.n + 1`, v.Path, v.Hour)
	return err
}

func addRevenue(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var o struct {
		Day   string `json:"day"`
		Cents int64  `json:"total_cents"`
	}
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx,
		`INSERT INTO revenue (day, cents) VALUES ($1, $2)
		 ON CONFLICT (day) DO UPDATE SET cents = revenue.cents + EXCLUDED.cents`, o.Day, o.Cents)
	return err
}

// Run runs both consumers until one fails or ctx ends.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	views, err := broker.Source(ctx, cfg.PageViewsSource, "analytics-views")
	if err != nil {
		return err
	}
	orders, err := broker.Source(ctx, cfg.OrdersSource, "analytics-revenue")
	if err != nil {
		return err
	}
	c := &counters{pool: pool}
	viewsConsumer, err := consumer.New(views, consumer.HandlerFunc(c.countView), consumer.Config{
		Name:        "analytics-views",
		Concurrency: cfg.Concurrency,
		Duplicates:  consumer.AllowDuplicates("page-view counters are approximate; a redelivery counts one extra view"),
	}, middleware.Logging())
	if err != nil {
		return err
	}
	revenueConsumer, err := consumer.New(orders, postgres.HandlerFunc(addRevenue), consumer.Config{
		Name:        "analytics-revenue",
		Concurrency: cfg.Concurrency,
	}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return viewsConsumer.Run(gctx) })
	g.Go(func() error { return revenueConsumer.Run(gctx) })
	return g.Wait()
}
