// Package pg holds the wallet service's database handle and queries.
package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool is the service's connection pool, set once by main.
var Pool *pgxpool.Pool

// Balance returns the wallet's balance in cents.
func Balance(ctx context.Context, walletID string) (int64, error) {
	var c int64
	err := Pool.QueryRow(ctx, `SELECT balance_cents FROM wallets WHERE id = $1`, walletID).Scan(&c)
	return c, err
}

// Credit adds cents to the wallet and records the movement.
func Credit(ctx context.Context, walletID, reference string, cents int64) error {
	if _, err := Pool.Exec(ctx, `UPDATE wallets SET balance_cents = balance_cents + $2 WHERE id = $1`, walletID, cents); err != nil {
		return fmt.Errorf("credit %s: %w", walletID, err)
	}
	_, err := Pool.Exec(ctx, `INSERT INTO wallet_movements (wallet_id, reference, cents) VALUES ($1, $2, $3)`, walletID, reference, cents)
	return err
}
