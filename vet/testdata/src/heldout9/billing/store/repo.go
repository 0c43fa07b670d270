// Package store is billing's typed persistence layer.
package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is what a repository runs statements on: the pool or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Entity is a row a Repo can write.
type Entity interface {
	Table() string
	Values() []any
}

// Repo writes rows of one type.
type Repo[T Entity] struct{ db DB }

// NewRepo returns a repository over the pool.
func NewRepo[T Entity](pool *pgxpool.Pool) *Repo[T] { return &Repo[T]{db: pool} }

// WithTx returns the same repository bound to tx.
func (r *Repo[T]) WithTx(tx pgx.Tx) *Repo[T] { return &Repo[T]{db: tx} }

// Put inserts v, ignoring a row already present.
func (r *Repo[T]) Put(ctx context.Context, v T) error {
	vals := v.Values()
	marks := make([]string, len(vals))
	for i := range vals {
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	q := "INSERT INTO " + v.Table() + " VALUES (" + strings.Join(marks, ",") + ") ON CONFLICT DO NOTHING"
	_, err := r.db.Exec(ctx, q, vals...)
	return err
}
