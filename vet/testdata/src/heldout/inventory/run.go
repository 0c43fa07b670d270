package inventory

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes reservations until ctx ends.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "reservations", "inventory")
	if err != nil {
		return err
	}
	stock := NewStock(pool, 10)
	c, err := consumer.New(src, postgres.HandlerFunc(stock.reserve), consumer.Config{Name: "inventory"},
		middleware.Logging(),
		middleware.Idempotency(st),
	)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
