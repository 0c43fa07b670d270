// Package telehealth books video consultations and expires unused rooms.
package telehealth

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/postgres"
)

type consultBooked struct {
	ConsultID string    `json:"consult_id"`
	Patient   string    `json:"patient"`
	Clinician string    `json:"clinician"`
	Start     time.Time `json:"start"`
}

// RoomTTL is how long after the start an unused room is closed.
const RoomTTL = 45 * time.Minute

func book(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var b consultBooked
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO rooms (consult_id, patient, clinician, opens_at) VALUES ($1, $2, $3, $4)`,
		b.ConsultID, b.Patient, b.Clinician, b.Start); err != nil {
		return err
	}
	time.AfterFunc(time.Until(b.Start.Add(RoomTTL)), func() {
		_, _ = tx.Exec(context.Background(), `UPDATE rooms SET closed = true WHERE consult_id = $1 AND joined_at IS NULL`, b.ConsultID) // want "transaction used after the handler returned"
	})
	return nil
}

// Run starts the booking consumer.
func Run(ctx context.Context, src consumer.Source, st store.Store) error {
	c, err := consumer.New(src, postgres.HandlerFunc(book), consumer.Config{Name: "telehealth-booking"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
