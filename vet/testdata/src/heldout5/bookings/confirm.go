package bookings

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

// Confirmer turns room holds into bookings.
type Confirmer struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	holdTTL time.Duration
}

type confirmation struct {
	HoldID    string `json:"hold_id"`
	BookingID string `json:"booking_id"`
}

func (c *Confirmer) confirm(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev confirmation
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bookings (id, hold_id) VALUES ($1, $2)`, ev.BookingID, ev.HoldID); err != nil {
		return err
	}
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	_, err = conn.Exec(ctx, `DELETE FROM room_holds WHERE id = $1`, ev.HoldID) // want "hold deleted on a pool connection"
	c.log.InfoContext(ctx, "booking confirmed", "booking", ev.BookingID)
	return err
}
