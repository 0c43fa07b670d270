// Package irrigation runs irrigation schedules for fields.
package irrigation

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout5/irrigation/valves"
)

type due struct {
	FieldID string `json:"field_id"`
	ValveID string `json:"valve_id"`
	Minutes int    `json:"minutes"`
}

// Scheduler starts due irrigation runs.
type Scheduler struct {
	Valves *valves.Client
}

func (s *Scheduler) start(ctx context.Context, tx pgx.Tx, d due) error {
	if _, err := tx.Exec(ctx, `INSERT INTO irrigation_runs (field_id, valve_id, minutes) VALUES ($1, $2, $3)`, d.FieldID, d.ValveID, d.Minutes); err != nil {
		return err
	}
	return s.Valves.Open(ctx, d.ValveID, d.Minutes) // want "valve opened over HTTP inside the handler"
}

func (s *Scheduler) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var d due
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	return s.start(ctx, tx, d)
}

// Run consumes due schedules.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, v *valves.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	s := &Scheduler{Valves: v}
	c, err := consumer.New(src, postgres.HandlerFunc(s.handle), consumer.Config{Name: "irrigation"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
