// Package repo is the tenants service's persistence. Writes join the
// claim's transaction found in the context; reads use the pool.
package repo

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/store/postgres"
)

// ErrNoTx is returned by a write called outside a claim.
var ErrNoTx = errors.New("repo: write outside a claim transaction")

// Tenants is the tenants table.
type Tenants struct {
	pool *pgxpool.Pool
}

// New returns the repository.
func New(pool *pgxpool.Pool) *Tenants { return &Tenants{pool: pool} }

// SetPlan changes a tenant's plan inside the claim's transaction.
func (t *Tenants) SetPlan(ctx context.Context, id, plan string) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return ErrNoTx
	}
	_, err := tx.Exec(ctx, `UPDATE tenants SET plan = $2 WHERE id = $1`, id, plan)
	return err
}

// Plan reads a tenant's plan.
func (t *Tenants) Plan(ctx context.Context, id string) (string, error) {
	var plan string
	err := t.pool.QueryRow(ctx, `SELECT plan FROM tenants WHERE id = $1`, id).Scan(&plan)
	return plan, err
}
