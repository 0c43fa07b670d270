package itinerary

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes itinerary events.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "itinerary.created", "itinerary")
	if err != nil {
		return err
	}
	b := &Builder{HoldFor: 20 * time.Minute, Log: slog.Default()}
	c, err := consumer.New(src, postgres.HandlerFunc(b.onCreated), consumer.Config{Name: "itinerary"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
