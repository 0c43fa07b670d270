// Package customers is the customer profile repository. It runs on the pool
// for the back-office API and on a transaction when given one.
package customers

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier is what both *pgxpool.Pool and pgx.Tx provide.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Repo reads and writes customer profiles on db.
type Repo struct {
	db Querier
}

// New returns a Repo on db.
func New(db Querier) *Repo { return &Repo{db: db} }

// WithTx returns a copy of the repository that runs on tx.
func (r *Repo) WithTx(tx pgx.Tx) *Repo { return &Repo{db: tx} }

// RiskLevel returns a customer's current risk level.
func (r *Repo) RiskLevel(ctx context.Context, customerID string) (string, error) {
	var lvl string
	if err := r.db.QueryRow(ctx, `SELECT risk_level FROM customers WHERE id = $1`, customerID).Scan(&lvl); err != nil {
		return "", fmt.Errorf("risk of %s: %w", customerID, err)
	}
	return lvl, nil
}

// SetKYCStatus records a review outcome.
func (r *Repo) SetKYCStatus(ctx context.Context, customerID, status, reviewer string) error {
	_, err := r.db.Exec(ctx,
		`UPDATE customers SET kyc_status = $2, kyc_reviewer = $3, kyc_reviewed_at = now() WHERE id = $1`,
		customerID, status, reviewer)
	if err != nil {
		return fmt.Errorf("kyc status of %s: %w", customerID, err)
	}
	return nil
}

// Freeze blocks outgoing payments of a customer.
func (r *Repo) Freeze(ctx context.Context, customerID, reason string) error {
	_, err := r.db.Exec(ctx, `UPDATE customers SET frozen = true, frozen_reason = $2 WHERE id = $1`, customerID, reason)
	return err
}
