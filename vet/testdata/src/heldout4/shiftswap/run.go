package shiftswap

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run applies approved swaps until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "rota.swap-approved", "shift-swap")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &swapper{shifts: &shiftRepo{}}
	c, err := consumer.New(src, postgres.HandlerFunc(h.apply), consumer.Config{Name: "shift-swap", Concurrency: 4}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
