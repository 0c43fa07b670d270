package dispatchroutes

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run keeps the board until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "pickups.lifecycle", "dispatch-board")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	mws := []consumer.Middleware{middleware.Logging()}
	mws = append(mws, middleware.Idempotency(st))
	c, err := consumer.New(src, postgres.HandlerFunc(NewBoard().dispatch), consumer.Config{Name: "dispatch-board"}, mws...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
