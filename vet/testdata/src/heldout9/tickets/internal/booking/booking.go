// Package booking books seats.
package booking

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"

	"heldout9/tickets/internal/stats"
)

var errSoldOut = errors.New("sold out")

// Booker books seats and tells the ticketing printer through the outbox.
type Booker struct {
	*stats.Stats
}

type request struct {
	Event string `json:"event"`
	Seat  string `json:"seat"`
	User  string `json:"user"`
}

// Book takes a seat.
func (b Booker) Book(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r request
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT taken FROM seats WHERE event = $1 AND seat = $2 FOR UPDATE`, r.Event, r.Seat).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return consumer.Permanent(errSoldOut)
	}
	if _, err := tx.Exec(ctx, `UPDATE seats SET taken = true, holder = $3 WHERE event = $1 AND seat = $2`, r.Event, r.Seat, r.User); err != nil {
		return err
	}
	if err := outbox.Send(ctx, tx, "tickets.print", &consumer.Message{Key: r.Event, Body: msg.Body}); err != nil {
		return err
	}
	b.Count(r.Event)
	return nil
}

// Release frees a seat.
func (b Booker) Release(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r request
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `UPDATE seats SET taken = false, holder = NULL WHERE event = $1 AND seat = $2`, r.Event, r.Seat)
	return err
}
