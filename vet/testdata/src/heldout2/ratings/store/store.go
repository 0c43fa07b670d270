// Package store is the ratings service's generic table access.
package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Querier runs statements; *pgxpool.Pool and pgx.Tx both satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Row is a record that knows its insert statement.
type Row interface {
	Insert() (string, []any)
}

// Table writes rows of one type.
type Table[R Row] struct {
	q Querier
}

// On returns a Table over q.
func On[R Row](q Querier) Table[R] { return Table[R]{q: q} }

// Insert writes r.
func (t Table[R]) Insert(ctx context.Context, r R) error {
	sql, args := r.Insert()
	_, err := t.q.Exec(ctx, sql, args...)
	return err
}

// Scan runs a read query.
func (t Table[R]) Scan(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.q.Query(ctx, sql, args...)
}
