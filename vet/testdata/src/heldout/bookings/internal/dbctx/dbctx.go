// Package dbctx gives handlers the transaction of the message they handle.
package dbctx

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/store/postgres"
)

// ErrNoTx means the handler runs outside a claim's transaction: it was wired
// without the idempotency middleware over the Postgres store.
var ErrNoTx = errors.New("dbctx: no claim transaction in context")

// Tx returns the claim's transaction.
func Tx(ctx context.Context) (pgx.Tx, error) {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return nil, ErrNoTx
	}
	return tx, nil
}
