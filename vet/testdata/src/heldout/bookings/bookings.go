// Package bookings confirms room bookings once payment is through.
package bookings

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/bookings/internal/dbctx"
)

type bookingPaid struct {
	BookingID string   `json:"booking_id"`
	RoomID    string   `json:"room_id"`
	Nights    []string `json:"nights"`
}

func confirm(ctx context.Context, msg *consumer.Message) error {
	var ev bookingPaid
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	tx, err := dbctx.Tx(ctx)
	if err != nil {
		return err
	}
	for _, night := range ev.Nights {
		if _, err := tx.Exec(ctx, `INSERT INTO room_nights (room_id, night, booking_id) VALUES ($1, $2, $3)`, ev.RoomID, night, ev.BookingID); err != nil {
			return fmt.Errorf("night %s: %w", night, err)
		}
	}
	_, err = tx.Exec(ctx, `UPDATE bookings SET state = 'confirmed' WHERE id = $1`, ev.BookingID)
	return err
}

// Run consumes bookings.paid.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "bookings.paid", "bookings")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, consumer.HandlerFunc(confirm), consumer.Config{Name: "bookings"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
