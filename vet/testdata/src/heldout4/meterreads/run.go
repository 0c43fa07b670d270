package meterreads

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run bills reads until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "meters.interval-read", "interval-billing")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &Biller{tariffs: &tariffs{pool: pool}}, consumer.Config{Name: "interval-billing", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
