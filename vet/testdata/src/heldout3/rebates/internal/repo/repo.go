// Package repo is the small generic table repository the rebates service
// uses for its append-only tables.
package repo

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DBTX is what the repository runs statements on: a pool, a connection or a
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Row is a value stored in one table row.
type Row interface {
	Table() string
	Columns() []string
	Values() []any
}

// Repo inserts rows of type T.
type Repo[T Row] struct {
	db DBTX
}

// New returns a repository running its statements on db.
func New[T Row](db DBTX) *Repo[T] {
	return &Repo[T]{db: db}
}

// Insert appends v to its table.
func (r *Repo[T]) Insert(ctx context.Context, v T) error {
	cols := v.Columns()
	marks := make([]string, len(cols))
	for i := range cols {
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", v.Table(), strings.Join(cols, ", "), strings.Join(marks, ", "))
	if _, err := r.db.Exec(ctx, q, v.Values()...); err != nil {
		return fmt.Errorf("repo: insert into %s: %w", v.Table(), err)
	}
	return nil
}

// Count returns how many rows of T's table match column = value.
func (r *Repo[T]) Count(ctx context.Context, column string, value any) (int, error) {
	var zero T
	var n int
	err := r.db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = $1", zero.Table(), column), value).Scan(&n)
	return n, err
}
