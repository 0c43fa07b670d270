package brewery

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

type gravityReading struct {
	Batch   string  `json:"batch"`
	Gravity float64 `json:"sg"`
	TempC   float64 `json:"temp_c"`
}

func recordGravity(ctx context.Context, tx pgx.Tx, r gravityReading) error {
	if _, err := tx.Exec(ctx, `INSERT INTO gravity (batch, sg, temp_c) VALUES ($1, $2, $3)`, r.Batch, r.Gravity, r.TempC); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE batches SET stage = 'conditioning' WHERE id = $1 AND $2 <= final_gravity`, r.Batch, r.Gravity)
	return err
}

// Run starts the gravity consumer.
func Run(ctx context.Context, src consumer.Source, st store.Store) error {
	c, err := consumer.New(src, Typed(recordGravity), consumer.Config{Name: "brewery-gravity"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
