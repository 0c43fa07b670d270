// Package bakery turns wholesale orders into production runs.
package bakery

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"example.com/platform"
)

type wholesaleOrder struct {
	Customer string         `json:"customer"`
	Bake     string         `json:"bake_date"`
	Lines    map[string]int `json:"lines"`
}

// Planner adds ordered quantities to the production plan.
type Planner struct{}

// Handle adds each line to the bake plan.
func (Planner) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("bakery: claim transaction missing")
	}
	if err := platform.Audit(msg); err != nil {
		return err
	}
	var o wholesaleOrder
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	for product, qty := range o.Lines {
		if _, err := tx.Exec(ctx, `INSERT INTO bake_plan (bake_date, product, qty) VALUES ($1, $2, $3)
ON CONFLICT (bake_date, product) DO UPDATE SET qty = bake_plan.qty + EXCLUDED.qty`, o.Bake, product, qty); err != nil {
			return err
		}
	}
	return nil
}

// Run starts the planner behind the platform's dedupe middleware.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := consumer.Chain(Planner{}, middleware.Logging())
	c, err := consumer.New(src, h, consumer.Config{Name: "bakery-planner"}, platform.Dedupe(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
