package brewpub

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type pour struct {
	Tap int       `json:"tap"`
	Keg string    `json:"keg"`
	Ml  int       `json:"ml"`
	At  time.Time `json:"at"`
}

// pours books a batch of flow-meter readings with one round trip.
func (c *Cellar) pours(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	b := &pgx.Batch{}
	for _, m := range msgs {
		var p pour
		if err := json.Unmarshal(m.Body, &p); err != nil {
			return consumer.Permanent(fmt.Errorf("pour %s: %w", m.ID, err))
		}
		b.Queue(`INSERT INTO pours (tap, keg, ml, poured_at) VALUES ($1, $2, $3, $4)`, p.Tap, p.Keg, p.Ml, p.At)
		b.Queue(`UPDATE kegs SET remaining_ml = remaining_ml - $2 WHERE id = $1`, p.Keg, p.Ml)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("book pours: %w", err)
	}
	return nil
}
