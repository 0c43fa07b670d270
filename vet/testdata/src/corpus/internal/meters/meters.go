// Package meters is a team's data layer for metered usage: a repository
// over the pool whose writes go through an unexported helper.
package meters

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Repo keeps usage totals.
type Repo struct{ pool *pgxpool.Pool }

// NewRepo returns the repository over pool.
func NewRepo(pool *pgxpool.Pool) *Repo { return &Repo{pool: pool} }

// Add adds units to the meter's total, in a transaction of its own.
func (r *Repo) Add(ctx context.Context, meter string, units int64) error {
	return r.bump(ctx, meter, units)
}

// AddTx adds units to the meter's total in the caller's transaction.
func (r *Repo) AddTx(ctx context.Context, tx pgx.Tx, meter string, units int64) error {
	_, err := tx.Exec(ctx, "UPDATE meters SET units = units + $2 WHERE id = $1", meter, units)
	return err
}

func (r *Repo) bump(ctx context.Context, meter string, units int64) error {
	_, err := r.pool.Exec(ctx, "UPDATE meters SET units = units + $2 WHERE id = $1", meter, units) // the statement gapbugrepostmt reaches
	return err
}
