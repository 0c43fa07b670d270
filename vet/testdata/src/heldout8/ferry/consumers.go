package ferry

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/shared/obs"
)

// Consumers starts the booking and the manifest consumers on RabbitMQ.
func Consumers(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) ([]*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	b, err := adapters.Open(ctx, "amqp://ferry:ferry@rabbitmq:5672/ferry")
	if err != nil {
		return nil, err
	}

	bookings, err := b.Source(ctx, "deck.bookings", "deck-allocator")
	if err != nil {
		return nil, err
	}
	book := consumer.Chain(postgres.HandlerFunc(Deck{}.Book), middleware.Logging(), obs.Timing(log), middleware.Idempotency(st))
	bc, err := consumer.New(bookings, book, consumer.Config{Name: "deck-allocator"})
	if err != nil {
		return nil, err
	}

	checkins, err := b.Source(ctx, "port.checkins", "port-manifest")
	if err != nil {
		return nil, err
	}
	manifest := consumer.Chain(Manifest{}, middleware.Logging(), obs.Timing(log))
	mc, err := consumer.New(checkins, manifest, consumer.Config{Name: "port-manifest"}) // want "manifest consumer without idempotency"
	if err != nil {
		return nil, err
	}
	return []*consumer.Consumer{bc, mc}, nil
}
