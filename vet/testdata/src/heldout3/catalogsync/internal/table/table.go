// Package table upserts rows of a single table.
package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Execer runs a statement.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

// Record is a row keyed by its first column.
type Record interface {
	TableName() string
	Columns() []string
	Values() []any
}

// Table upserts records of type T.
type Table[T Record] struct {
	db Execer
}

// On returns a Table running its statements on db.
func On[T Record](db Execer) Table[T] { return Table[T]{db: db} }

// Upsert inserts r, or updates every other column when its key exists.
func (t Table[T]) Upsert(ctx context.Context, r T) error {
	cols := r.Columns()
	marks := make([]string, len(cols))
	sets := make([]string, 0, len(cols)-1)
	for i, c := range cols {
		marks[i] = fmt.Sprintf("$%d", i+1)
		if i > 0 {
			sets = append(sets, c+" = EXCLUDED."+c)
		}
	}
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET %s",
		r.TableName(), strings.Join(cols, ", "), strings.Join(marks, ", "), cols[0], strings.Join(sets, ", "))
	_, err := t.db.Exec(ctx, q, r.Values()...)
	return err
}
