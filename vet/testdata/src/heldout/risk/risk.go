// Package risk scores loan applications and stores the decision.
package risk

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/pipeline"
)

type application struct {
	ApplicationID  string `json:"application_id"`
	IncomeCents    int64  `json:"income_cents"`
	DebtCents      int64  `json:"debt_cents"`
	AmountCents    int64  `json:"amount_cents"`
	MonthsEmployed int    `json:"months_employed"`
}

type decider struct {
	scorers   *scorers
	threshold float64
}

func (d *decider) decide(ctx context.Context, tx pgx.Tx, app application) error {
	result := make(chan []signal, 1)
	select {
	case d.scorers.jobs <- scoreJob{app: app, result: result}:
	case <-ctx.Done():
		return ctx.Err()
	}
	var sigs []signal
	select {
	case sigs = <-result:
	case <-ctx.Done():
		return ctx.Err()
	}
	score := 0.0
	for _, s := range sigs {
		score += s.weight * s.value
	}
	explain, err := json.Marshal(sigs)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx,
		`INSERT INTO risk_decisions (application_id, score, approved, explanation) VALUES ($1, $2, $3, $4)`,
		app.ApplicationID, score, score < d.threshold, explain)
	return err
}

// Run consumes loan applications.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	d := &decider{scorers: newScorers(4), threshold: 0.6}
	defer d.scorers.stop()
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:  "loans.applications",
		Name:    "risk",
		Handler: pipeline.Typed(d.decide),
	})
}
