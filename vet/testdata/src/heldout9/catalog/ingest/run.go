package ingest

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Run runs the catalog consumers until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, m *Merger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	changed, err := broker.Source(ctx, "products.changed", "catalog-merge")
	if err != nil {
		return err
	}
	retired, err := broker.Source(ctx, "products.retired", "catalog-retire")
	if err != nil {
		return err
	}
	c1, err := consumer.New(changed, m.Handler(), consumer.Config{Name: "catalog-merge", Concurrency: 16}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	c2, err := consumer.New(retired, postgres.HandlerFunc(m.Retire), consumer.Config{Name: "catalog-retire"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c1.Run(gctx) })
	g.Go(func() error { return c2.Run(gctx) })
	return g.Wait()
}
