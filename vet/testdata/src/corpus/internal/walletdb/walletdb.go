// Package walletdb holds a service's package-level connection pool and
// its queries.
package walletdb

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool is the service's pool, set once by its main.
var Pool *pgxpool.Pool

// Balance reads a wallet's balance through Pool.
func Balance(ctx context.Context, id string) (int64, error) {
	var c int64
	err := Pool.QueryRow(ctx, "SELECT cents FROM wallets WHERE id = $1", id).Scan(&c)
	return c, err
}

// Credit adds cents to a wallet through Pool.
func Credit(ctx context.Context, id string, cents int64) error {
	_, err := Pool.Exec(ctx, "UPDATE wallets SET cents = cents + $2 WHERE id = $1", id, cents)
	return err
}

// CreditTx adds cents to a wallet in tx.
func CreditTx(ctx context.Context, tx pgx.Tx, id string, cents int64) error {
	_, err := tx.Exec(ctx, "UPDATE wallets SET cents = cents + $2 WHERE id = $1", id, cents)
	return err
}
