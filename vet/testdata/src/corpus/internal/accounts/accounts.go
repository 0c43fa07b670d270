// Package accounts is a team's data layer: a repository over the pool.
package accounts

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type Repo struct{ pool *pgxpool.Pool }

func NewRepo(pool *pgxpool.Pool) *Repo { return &Repo{pool: pool} }

// Credit writes in the caller's transaction.
func (r *Repo) Credit(ctx context.Context, tx pgx.Tx, account string, cents int64) error {
	_, err := tx.Exec(ctx, "UPDATE accounts SET cents = cents + $2 WHERE id = $1", account, cents)
	return err
}

// Touch writes through the pool, in a transaction of its own.
func (r *Repo) Touch(ctx context.Context, account string) error {
	_, err := r.pool.Exec(ctx, "UPDATE accounts SET seen_at = now() WHERE id = $1", account)
	return err
}

// Balance reads through the pool.
func (r *Repo) Balance(ctx context.Context, account string) (int64, error) {
	var n int64
	err := r.pool.QueryRow(ctx, "SELECT cents FROM accounts WHERE id = $1", account).Scan(&n)
	return n, err
}
