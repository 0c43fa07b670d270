// Package pgutil holds the database interfaces shared by the services.
package pgutil

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// DBTX runs statements; *pgxpool.Pool and pgx.Tx both satisfy it.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
