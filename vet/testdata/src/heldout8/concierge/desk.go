// Package concierge books reservations requested at the front desk.
package concierge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/concierge/booking"
)

type handlerFn func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error

// Desk holds the concierge's use cases, one per event type.
type Desk struct {
	notifier booking.Notifier
	handlers map[string]handlerFn
}

// NewDesk returns a desk telling guests through n.
func NewDesk(n booking.Notifier) *Desk {
	d := &Desk{notifier: n}
	d.handlers = map[string]handlerFn{
		"reservation.requested": d.onRequested,
		"reservation.cancelled": d.onCancelled,
	}
	return d
}

// Dispatch is the consumer's handler: it picks the use case by type.
func (d *Desk) Dispatch(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	h, ok := d.handlers[msg.Headers["ce_type"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("concierge: unknown type %q", msg.Headers["ce_type"]))
	}
	return h(ctx, tx, msg)
}

func (d *Desk) onRequested(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	r, err := d.reservation(msg)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO reservations (id, guest, kind, at, status) VALUES ($1, $2, $3, $4, 'confirmed')`,
		r.ID, r.GuestName, r.Kind, r.At); err != nil {
		return err
	}
	return d.notifier.Confirmed(ctx, r) // want "confirmation mailed inside the transaction"
}

func (d *Desk) onCancelled(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	r, err := d.reservation(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE reservations SET status = 'cancelled' WHERE id = $1`, r.ID)
	return err
}

func (d *Desk) reservation(msg *consumer.Message) (booking.Reservation, error) {
	var r booking.Reservation
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return r, consumer.Permanent(err)
	}
	return r, nil
}
