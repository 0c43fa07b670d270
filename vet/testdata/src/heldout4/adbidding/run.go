package adbidding

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the win settler.
type Config struct {
	BrokerURL         string
	PacingFloorMicros int64
}

// Run settles auction wins until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	broker, err := adapters.Open(ctx, cfg.BrokerURL)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "exchange.auction-won", "win-settler")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	w := &winSettler{budgetRepo: &budgetRepo{pool: pool}, pacingFloor: cfg.PacingFloorMicros}
	c, err := consumer.New(src, postgres.HandlerFunc(w.settle), consumer.Config{Name: "win-settler", Concurrency: 16}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
