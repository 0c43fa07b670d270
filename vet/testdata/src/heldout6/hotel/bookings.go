// Package hotel confirms room bookings and notifies housekeeping.
package hotel

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type booking struct {
	ID      string `json:"id"`
	Room    string `json:"room"`
	Arrival string `json:"arrival"`
}

// Confirmer confirms bookings.
type Confirmer struct{}

// Handle confirms the booking and queues the housekeeping request in the same transaction.
func (Confirmer) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("hotel: claim transaction missing")
	}
	var b booking
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE bookings SET status = 'confirmed' WHERE id = $1`, b.ID); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "housekeeping.requests", &consumer.Message{
		ID:   "prep-" + b.ID,
		Key:  b.Room,
		Body: msg.Body,
	})
}

// Run starts the relay and the consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	relay, err := outbox.NewRelay(pool, broker, outbox.Config{})
	if err != nil {
		return err
	}
	go func() { _ = relay.Run(ctx) }()
	src, err := broker.Source(ctx, "bookings.created", "hotel-confirm")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, Confirmer{}, consumer.Config{Name: "hotel-confirm"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
