package regatta

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type finish struct {
	Race    string    `json:"race"`
	Boat    string    `json:"boat"`
	Crossed time.Time `json:"crossed"`
}

// Handle records a boat crossing the line.
func (o *RaceOffice) Handle(ctx context.Context, msg *consumer.Message) error {
	var f finish
	if err := json.Unmarshal(msg.Body, &f); err != nil {
		return consumer.Permanent(err)
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("regatta: no claim transaction")
	}
	if _, err := tx.Exec(ctx, `INSERT INTO finishes (race, boat, crossed_at) VALUES ($1, $2, $3)`, f.Race, f.Boat, f.Crossed); err != nil {
		return err
	}
	go o.closeProtestWindow(context.WithoutCancel(ctx), f) // want "goroutine"
	return nil
}

// closeProtestWindow confirms the boat's place once no protest came in.
func (o *RaceOffice) closeProtestWindow(ctx context.Context, f finish) {
	time.Sleep(o.cfg.ProtestWindow)
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return
	}
	if _, err := tx.Exec(ctx, `UPDATE finishes SET provisional = false WHERE race = $1 AND boat = $2
		AND NOT EXISTS (SELECT 1 FROM protests WHERE race = $1 AND against = $2)`, f.Race, f.Boat); err != nil {
		o.log.Error("confirm finish", "race", f.Race, "boat", f.Boat, "err", err)
	}
}
