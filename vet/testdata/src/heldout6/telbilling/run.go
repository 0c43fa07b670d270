package telbilling

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout6/telbilling/usage"
)

// Run wires the rater consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "cdr.rated", "telbilling")
	if err != nil {
		return err
	}
	r := &Rater{Usage: &usage.Repo{Pool: pool}}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(r.rate), consumer.Config{Name: "telbilling"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
