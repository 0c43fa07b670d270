// Package itinerary builds travel itineraries and keeps seat holds short.
package itinerary

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type itineraryCreated struct {
	ID      string   `json:"id"`
	Flights []string `json:"flights"`
}

// Builder stores itineraries and places seat holds.
type Builder struct {
	HoldFor time.Duration
	Log     *slog.Logger
}

func (b *Builder) onCreated(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev itineraryCreated
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	for _, f := range ev.Flights {
		if _, err := tx.Exec(ctx, `INSERT INTO seat_holds (itinerary_id, flight) VALUES ($1, $2)`, ev.ID, f); err != nil {
			return err
		}
	}
	time.AfterFunc(b.HoldFor, func() { b.release(ctx, tx, ev.ID) }) // want "claim transaction kept in a timer beyond the handler"
	return nil
}

func (b *Builder) release(ctx context.Context, tx pgx.Tx, id string) {
	if _, err := tx.Exec(ctx, `DELETE FROM seat_holds WHERE itinerary_id = $1 AND NOT confirmed`, id); err != nil {
		b.Log.Warn("release holds", "itinerary", id, "err", err)
	}
}
