// Package housekeeping marks rooms dirty when guests check out and puts them
// on the cleaning round.
package housekeeping

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type guestCheckedOut struct {
	HotelID     string `json:"hotel_id"`
	Room        string `json:"room"`
	NextArrival bool   `json:"next_arrival_today"`
}

// Checkouts handles check-outs.
type Checkouts struct {
	notify Notifier
}

// Option configures Checkouts.
type Option func(*Checkouts)

// WithNotifier sends cleaning requests through n; the default sends none.
func WithNotifier(n Notifier) Option { return func(c *Checkouts) { c.notify = n } }

// NewCheckouts returns Checkouts with opts applied.
func NewCheckouts(opts ...Option) *Checkouts {
	c := &Checkouts{notify: nopNotifier{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func (c *Checkouts) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev guestCheckedOut
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode checkout: %w", err))
	}
	if _, err := tx.Exec(ctx,
		`UPDATE rooms SET status = 'dirty', occupied = false WHERE hotel_id = $1 AND number = $2`, ev.HotelID, ev.Room); err != nil {
		return fmt.Errorf("room %s/%s: %w", ev.HotelID, ev.Room, err)
	}
	priority := 1
	if ev.NextArrival {
		priority = 3
	}
	return c.notify.RoomToClean(ctx, ev.HotelID, ev.Room, priority) // want "cleaning request sent to SQS inside the claim transaction instead of the outbox"
}
