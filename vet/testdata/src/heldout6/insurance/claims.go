// Package insurance registers first notices of loss.
package insurance

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type lossNotice struct {
	ClaimID  string `json:"claim_id"`
	PolicyID string `json:"policy_id"`
	Region   string `json:"region"`
}

// Intake opens claims and assigns an adjuster.
type Intake struct {
	Log *slog.Logger
}

func (in *Intake) open(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var n lossNotice
	if err := json.Unmarshal(msg.Body, &n); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO claims (id, policy_id, status) VALUES ($1, $2, 'open')`, n.ClaimID, n.PolicyID); err != nil {
		return err
	}
	// Adjuster assignment is slow (it scans workloads); do not hold the message for it.
	go in.assignAdjuster(ctx, tx, n) // want "transaction used by another goroutine"
	return nil
}

func (in *Intake) assignAdjuster(ctx context.Context, tx pgx.Tx, n lossNotice) {
	var adjuster string
	if err := tx.QueryRow(ctx, `SELECT id FROM adjusters WHERE region = $1 ORDER BY open_claims LIMIT 1`, n.Region).Scan(&adjuster); err != nil {
		in.Log.Error("assign adjuster", "claim", n.ClaimID, "err", err)
		return
	}
	if _, err := tx.Exec(ctx, `UPDATE claims SET adjuster_id = $2 WHERE id = $1`, n.ClaimID, adjuster); err != nil {
		in.Log.Error("assign adjuster", "claim", n.ClaimID, "err", err)
	}
}

// Run starts the intake consumer.
func Run(ctx context.Context, src consumer.Source, st *postgres.Store, log *slog.Logger) error {
	in := &Intake{Log: log}
	c, err := consumer.New(src, postgres.HandlerFunc(in.open), consumer.Config{Name: "fnol-intake"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
