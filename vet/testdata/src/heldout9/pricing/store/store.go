// Package store holds pricing's transactional helpers.
package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// InTx runs fn inside a savepoint of tx: a failing fn rolls back only its
// own statements, and the caller's transaction goes on.
func InTx(ctx context.Context, tx pgx.Tx, fn func(sp pgx.Tx) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(sp); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}

// Prices writes price rows.
type Prices struct{}

// Set writes sku's price in currency through q.
func (Prices) Set(ctx context.Context, q pgx.Tx, sku, currency string, amount int64) error {
	_, err := q.Exec(ctx, `INSERT INTO prices (sku, currency, amount) VALUES ($1, $2, $3)
		ON CONFLICT (sku, currency) DO UPDATE SET amount = EXCLUDED.amount`, sku, currency, amount)
	return err
}
