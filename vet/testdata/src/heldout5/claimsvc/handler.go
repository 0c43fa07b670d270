// Package claimsvc approves insurance claims.
package claimsvc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout5/claimsvc/repo"
)

type approval struct {
	ClaimID string `json:"claim_id"`
	Cents   int64  `json:"payout_cents"`
}

// Approver applies claim approvals.
type Approver struct {
	Claims repo.Claims
	Audit  *repo.Audit
}

func (a *Approver) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev approval
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode approval: %w", err))
	}
	if err := a.Claims.Approve(ctx, tx, ev.ClaimID, ev.Cents); err != nil {
		return fmt.Errorf("approve %s: %w", ev.ClaimID, err)
	}
	return a.Audit.Record(ctx, ev.ClaimID, "approved") // want "audit record written through the pool"
}
