// Package ledgerrepo is a team's data layer for ledger entries.
package ledgerrepo

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type Store struct{ pool *pgxpool.Pool }

func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// InsertTx writes an entry in the caller's transaction.
func (s *Store) InsertTx(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, "INSERT INTO entries (id) VALUES ($1)", id)
	return err
}

// Bump updates the running total on its own connection.
func (s *Store) Bump(ctx context.Context, n int) error {
	return s.bump(ctx, n)
}

func (s *Store) bump(ctx context.Context, n int) error {
	_, err := s.pool.Exec(ctx, "UPDATE totals SET n = n + $1", n)
	return err
}
