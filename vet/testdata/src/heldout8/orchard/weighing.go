// Package orchard records weighed crates at the packing house and pays the
// pickers per kilogram.
package orchard

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type crateWeighed struct {
	CrateID string  `json:"crate_id"`
	Block   string  `json:"block"`
	Variety string  `json:"variety"`
	Picker  string  `json:"picker"`
	Kg      float64 `json:"kg"`
}

// Scale is the weighing handler.
type Scale struct {
	prices priceBoard
}

func (s *Scale) credit(ctx context.Context, tx pgx.Tx, c crateWeighed, cents int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO picker_earnings (picker, crate_id, cents) VALUES ($1, $2, $3)`, c.Picker, c.CrateID, cents)
	return err
}

// Weigh records a crate, credits its picker and announces the crate.
func (s *Scale) Weigh(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c crateWeighed
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	unlock, err := s.prices.lockBlock(ctx, c.Block)
	if err != nil {
		return err // errLocked included: retried with the policy's backoff
	}
	defer unlock()
	perKg, err := s.prices.centsPerKg(ctx, c.Variety)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO crates (id, block, variety, kg) VALUES ($1, $2, $3, $4)`, c.CrateID, c.Block, c.Variety, c.Kg); err != nil {
		return err
	}
	if err := s.credit(ctx, tx, c, int64(c.Kg*float64(perKg))); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "packhouse.crates", &consumer.Message{Key: c.Block, Body: msg.Body})
}
