// Package usage keeps per-subscriber rated usage.
package usage

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Repo records rated call detail records.
type Repo struct {
	Pool *pgxpool.Pool
}

// Record adds the rated seconds to the subscriber's running total.
func (r *Repo) Record(ctx context.Context, msisdn string, seconds int64) error {
	_, err := r.Pool.Exec(ctx, `UPDATE usage_totals SET seconds = seconds + $2 WHERE msisdn = $1`, msisdn, seconds) // want "pool write inside transactional handler"
	return err
}

// Plan reads the subscriber's tariff plan.
func (r *Repo) Plan(ctx context.Context, msisdn string) (string, error) {
	var plan string
	err := r.Pool.QueryRow(ctx, `SELECT plan FROM subscribers WHERE msisdn = $1`, msisdn).Scan(&plan)
	return plan, err
}
