// Package loom grades inspected fabric rolls from the weaving mill in
// batches, through a small channel pipeline.
package loom

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type fabricRoll struct {
	RollID  string   `json:"roll_id"`
	Loom    string   `json:"loom"`
	LengthM float64  `json:"length_m"`
	Defects []string `json:"defects"`
}

// Inspection is the batch handler.
type Inspection struct{}

// Grade runs the batch through the pipeline and writes every graded roll in
// the batch's transaction. The pipeline's goroutines see the context only,
// the loop below drains the last stage until it is closed, and wait joins
// every stage before Grade returns.
func (Inspection) Grade(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &pipeline{ctx: pctx}

	var firstErr error
	for g := range p.grade(p.parse(p.source(msgs))) {
		if firstErr != nil {
			continue
		}
		if g.err != nil {
			firstErr = g.err
			cancel()
			continue
		}
		if _, err := tx.Exec(ctx, `INSERT INTO roll_grades (roll_id, loom, grade, defects) VALUES ($1, $2, $3, $4)
			ON CONFLICT (roll_id) DO UPDATE SET grade = EXCLUDED.grade, defects = EXCLUDED.defects`,
			g.roll.RollID, g.roll.Loom, g.grade, len(g.roll.Defects)); err != nil {
			firstErr = err
			cancel()
		}
	}
	p.wait()
	return firstErr
}
