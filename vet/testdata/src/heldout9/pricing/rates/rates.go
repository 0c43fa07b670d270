// Package rates reads exchange rates, cached in memory.
package rates

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Cache is a read-through cache of the rates table.
type Cache struct {
	pool *pgxpool.Pool
	ttl  time.Duration

	mu sync.Mutex
	m  map[string]entry
}

type entry struct {
	rate float64
	at   time.Time
}

// NewCache returns a cache over pool.
func NewCache(pool *pgxpool.Pool, ttl time.Duration) *Cache {
	return &Cache{pool: pool, ttl: ttl, m: map[string]entry{}}
}

// Rate returns the rate from EUR to currency.
func (c *Cache) Rate(ctx context.Context, currency string) (float64, error) {
	c.mu.Lock()
	e, ok := c.m[currency]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.rate, nil
	}
	var r float64
	if err := c.pool.QueryRow(ctx, `SELECT rate FROM fx_rates WHERE currency = $1`, currency).Scan(&r); err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.m[currency] = entry{rate: r, at: time.Now()}
	c.mu.Unlock()
	return r, nil
}
