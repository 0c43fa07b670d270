// Package deals tracks deal stages.
package deals

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Stages moves deals between stages and keeps the stage counters.
type Stages struct{}

// Moved records a stage change.
func (Stages) Moved(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var m struct {
		Deal string `json:"deal"`
		From string `json:"from"`
		To   string `json:"to"`
	}
	if err := json.Unmarshal(msg.Body, &m); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE stage_counts SET n = n - 1 WHERE stage = $1`, m.From); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE stage_counts SET n = n + 1 WHERE stage = $1`, m.To); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE deals SET stage = $2 WHERE id = $1`, m.Deal, m.To)
	return err
}
