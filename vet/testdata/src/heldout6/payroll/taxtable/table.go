// Package taxtable reads withholding brackets.
package taxtable

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Reader looks up withholding rates; the table is reference data loaded by a separate job.
type Reader struct {
	Pool *pgxpool.Pool
}

// RateBasisPoints returns the withholding rate for an annualised gross.
func (r *Reader) RateBasisPoints(ctx context.Context, jurisdiction string, annualCts int64) (int64, error) {
	var bp int64
	err := r.Pool.QueryRow(ctx, `SELECT rate_bp FROM brackets WHERE jurisdiction = $1 AND floor_cents <= $2 ORDER BY floor_cents DESC LIMIT 1`,
		jurisdiction, annualCts).Scan(&bp)
	return bp, err
}
