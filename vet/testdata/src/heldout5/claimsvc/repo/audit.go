// Package repo holds the claims service's repositories.
package repo

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Claims writes claim rows in the caller's transaction.
type Claims struct{}

// Approve marks a claim approved.
func (Claims) Approve(ctx context.Context, tx pgx.Tx, claimID string, cents int64) error {
	_, err := tx.Exec(ctx, `UPDATE claims SET status = 'approved', payout_cents = $2 WHERE id = $1`, claimID, cents)
	return err
}

// Audit appends to the audit trail.
type Audit struct{ pool *pgxpool.Pool }

// NewAudit returns an audit trail writing through pool.
func NewAudit(pool *pgxpool.Pool) *Audit { return &Audit{pool: pool} }

// Record appends one audit event.
func (a *Audit) Record(ctx context.Context, claimID, event string) error {
	_, err := a.pool.Exec(ctx, `INSERT INTO claim_audit (claim_id, event) VALUES ($1, $2)`, claimID, event)
	return err
}
