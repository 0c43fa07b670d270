// Package pricing applies discount rules published by the merchandising tool.
package pricing

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/flags"
	"heldout/platform/pipeline"
	"heldout/pricing/history"
)

type ruleChanged struct {
	RuleID   string  `json:"rule_id"`
	Percent  float64 `json:"percent"`
	Category string  `json:"category"`
	Active   bool    `json:"active"`
}

// Rules applies rule changes.
type Rules struct {
	history *history.Log
	flags   *flags.Client
}

func (r *Rules) apply(ctx context.Context, tx pgx.Tx, ev ruleChanged) error {
	if ev.Percent < 0 || ev.Percent > 90 {
		return fmt.Errorf("rule %s: percent %.1f out of range", ev.RuleID, ev.Percent)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO price_rules (id, percent, category, active) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (id) DO UPDATE SET percent = EXCLUDED.percent, category = EXCLUDED.category, active = EXCLUDED.active`,
		ev.RuleID, ev.Percent, ev.Category, ev.Active); err != nil {
		return err
	}
	if !r.flags.Enabled("pricing.history") {
		return nil
	}
	return r.history.Append(ctx, ev.RuleID, ev) // want "history appended through the pool"
}

// Run consumes pricing.rules.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, fl *flags.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	r := &Rules{history: history.Open(pool), flags: fl}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:  "pricing.rules",
		Name:    "pricing",
		Handler: pipeline.Typed(r.apply),
	})
}
