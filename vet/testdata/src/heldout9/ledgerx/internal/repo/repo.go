// Package repo holds the ledger's typed repositories.
package repo

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Querier runs statements; both the pool and a transaction satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Keyed is a row with a primary key.
type Keyed interface{ Key() string }

// Table is a generic key/value table of rows of type T.
type Table[T Keyed] struct {
	q      Querier
	insert string
	lookup string
	encode func(T) []any
}

// NewTable returns a table using q.
func NewTable[T Keyed](q Querier, insert, lookup string, encode func(T) []any) *Table[T] {
	return &Table[T]{q: q, insert: insert, lookup: lookup, encode: encode}
}

// WithTx returns the table bound to tx.
func (t *Table[T]) WithTx(tx pgx.Tx) *Table[T] {
	c := *t
	c.q = tx
	return &c
}

// Save writes v.
func (t *Table[T]) Save(ctx context.Context, v T) error {
	_, err := t.q.Exec(ctx, t.insert, t.encode(v)...)
	return err
}

// Exists reports whether a row with key k exists.
func (t *Table[T]) Exists(ctx context.Context, k string) (bool, error) {
	var ok bool
	err := t.q.QueryRow(ctx, t.lookup, k).Scan(&ok)
	return ok, err
}
