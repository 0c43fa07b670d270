// Package claimsadjust applies adjusters' decisions to insurance claims.
package claimsadjust

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type decisionMade struct {
	ClaimID     string `json:"claim_id"`
	AdjusterID  string `json:"adjuster_id"`
	Outcome     string `json:"outcome"`
	AmountCents int64  `json:"amount_cents"`
}

// Adjuster applies decisions.
type Adjuster struct {
	log        *slog.Logger
	reviewOver int64
}

// Handle applies one decision in the claim's transaction.
func (a *Adjuster) Handle(ctx context.Context, msg *consumer.Message) error {
	var d decisionMade
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(fmt.Errorf("decode decision: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("claimsadjust: no transaction")
	}
	if _, err := tx.Exec(ctx,
		`UPDATE claims SET status = $2, settled_cents = $3, adjuster_id = $4 WHERE id = $1`,
		d.ClaimID, d.Outcome, d.AmountCents, d.AdjusterID); err != nil {
		return fmt.Errorf("apply decision: %w", err)
	}
	if d.AmountCents > a.reviewOver {
		go a.queueSecondReview(ctx, d) // want "goroutine takes the handler ctx carrying the claim transaction and outlives the handler"
	}
	return nil
}

// queueSecondReview puts large settlements on the senior adjusters' list.
func (a *Adjuster) queueSecondReview(ctx context.Context, d decisionMade) {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return
	}
	if err := insertReview(ctx, tx, d); err != nil {
		a.log.Warn("second review not queued", "claim", d.ClaimID, "err", err)
	}
}

func insertReview(ctx context.Context, tx pgx.Tx, d decisionMade) error {
	_, err := tx.Exec(ctx, `INSERT INTO review_queue (claim_id, amount_cents, reason) VALUES ($1, $2, 'over threshold')`, d.ClaimID, d.AmountCents)
	return err
}
