package bookings

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes booking confirmations.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, opts ...Option) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "bookings.confirmed", "bookings")
	if err != nil {
		return err
	}
	c := NewConfirmer(pool, opts...)
	cons, err := consumer.New(src, postgres.HandlerFunc(c.confirm), consumer.Config{Name: "bookings"}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}
