package bookingsaga

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Main wires the container and runs the payment step.
func Main(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	d, err := NewDeps(ctx, pool, broker)
	if err != nil {
		return err
	}
	if err := d.ExpireStaleSagas(ctx); err != nil {
		return err
	}
	go d.Relay.Run(ctx)
	src, err := d.Broker.Source(ctx, "payments.captured", "bookingsaga")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &PaymentStep{deps: d}, consumer.Config{Name: "bookingsaga"}, middleware.Idempotency(d.Store))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
