// Package ferry books car deck space on ferry sailings and keeps the
// manifest the port authority receives.
package ferry

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

var errDeckFull = errors.New("car deck full")

// errNoRows stands for the driver's no-rows error.
var errNoRows = errors.New("no rows in result set")

type bookingRequested struct {
	BookingID string `json:"booking_id"`
	SailingID string `json:"sailing_id"`
	Plate     string `json:"plate"`
	LengthCm  int    `json:"length_cm"`
}

type checkIn struct {
	BookingID string `json:"booking_id"`
	Lane      int    `json:"lane"`
}

// Deck allocates space on a sailing's car deck.
type Deck struct{}

// Book is the booking handler, run in the claim's transaction.
func (d Deck) Book(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var b bookingRequested
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	var free int
	if err := tx.QueryRow(ctx, `UPDATE sailings SET deck_free_cm = deck_free_cm - $2 WHERE id = $1 AND deck_free_cm >= $2 RETURNING deck_free_cm`,
		b.SailingID, b.LengthCm).Scan(&free); errors.Is(err, errNoRows) {
		return consumer.Permanent(errDeckFull)
	} else if err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO deck_bookings (id, sailing_id, plate, length_cm) VALUES ($1, $2, $3, $4)`,
		b.BookingID, b.SailingID, b.Plate, b.LengthCm)
	return err
}

// Manifest records check-ins on the port authority's manifest.
type Manifest struct{}

// Handle adds a checked-in vehicle to the manifest.
func (Manifest) Handle(ctx context.Context, msg *consumer.Message) error {
	var c checkIn
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("ferry: manifest needs the claim's transaction")
	}
	_, err := tx.Exec(ctx, `INSERT INTO manifest (booking_id, lane) SELECT id, $2 FROM deck_bookings WHERE id = $1`, c.BookingID, c.Lane)
	return err
}
