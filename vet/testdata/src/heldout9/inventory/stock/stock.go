// Package stock keeps stock levels and a cache of them.
package stock

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Levels is an in-memory cache of stock levels refreshed from the database.
type Levels struct {
	mu sync.Mutex
	m  map[string]int
}

// NewLevels returns an empty cache.
func NewLevels() *Levels { return &Levels{m: map[string]int{}} }

// Set records a level.
func (l *Levels) Set(sku string, n int) {
	l.mu.Lock()
	l.m[sku] = n
	l.mu.Unlock()
}

// Refresh reads sku's level through q and caches it.
func (l *Levels) Refresh(ctx context.Context, q pgx.Tx, sku string) error {
	var n int
	if err := q.QueryRow(ctx, `SELECT on_hand FROM stock WHERE sku = $1`, sku).Scan(&n); err != nil {
		return err
	}
	l.Set(sku, n)
	return nil
}
