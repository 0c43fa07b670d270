// Package db is loyalty's database base type, embedded by the repositories.
package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Base holds the pool and the statements every repository shares.
type Base struct {
	pool *pgxpool.Pool
}

// NewBase wraps pool.
func NewBase(pool *pgxpool.Pool) *Base { return &Base{pool: pool} }

// Exec runs a statement, wrapping its error with the statement's name.
func (b *Base) Exec(ctx context.Context, name, sql string, args ...any) error {
	if _, err := b.pool.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Healthy pings the database.
func (b *Base) Healthy(ctx context.Context) error { return b.pool.Ping(ctx) }
