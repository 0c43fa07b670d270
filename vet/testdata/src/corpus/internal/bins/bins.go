// Package bins is the corpus's bin-location store (see vet/corpus_test.go):
// InTx opens a transaction of its own on the pool; Within a savepoint of
// the transaction it is given.
package bins

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store holds the pool.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// InTx runs fn in a transaction of its own, committed when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// Within runs fn in a savepoint of tx.
func (s *Store) Within(ctx context.Context, tx pgx.Tx, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, tx, fn)
}

// Place records qty of sku in bin, in tx.
func Place(ctx context.Context, tx pgx.Tx, bin, sku string, qty int) error {
	_, err := tx.Exec(ctx, `INSERT INTO bin_stock (bin, sku, qty) VALUES ($1, $2, $3)`, bin, sku, qty)
	return err
}
