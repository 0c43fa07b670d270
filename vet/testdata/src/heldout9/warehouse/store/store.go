// Package store is the warehouse's data access.
package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store runs the warehouse's statements.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// InTx runs fn in a transaction of its own, committed when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// Locations is the bin-location table bound to one transaction.
type Locations struct{ tx pgx.Tx }

// LocationsIn binds the table to tx.
func LocationsIn(tx pgx.Tx) Locations { return Locations{tx: tx} }

// Place records qty of sku in bin.
func (l Locations) Place(ctx context.Context, bin, sku string, qty int) error {
	_, err := l.tx.Exec(ctx, `INSERT INTO bin_stock (bin, sku, qty) VALUES ($1, $2, $3)
		ON CONFLICT (bin, sku) DO UPDATE SET qty = bin_stock.qty + EXCLUDED.qty`, bin, sku, qty)
	return err
}

// Free reduces bin's free capacity.
func (l Locations) Free(ctx context.Context, bin string, qty int) error {
	_, err := l.tx.Exec(ctx, `UPDATE bins SET free = free - $2 WHERE id = $1`, bin, qty)
	return err
}
