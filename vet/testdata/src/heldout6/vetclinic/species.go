// Package vetclinic records vaccinations for patients of the clinic.
package vetclinic

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// speciesCache memoises booster intervals per species.
type speciesCache struct {
	mu   sync.Mutex
	pool *pgxpool.Pool
	days map[string]int
}

func (c *speciesCache) boosterDays(ctx context.Context, species, vaccine string) (int, error) {
	key := species + "/" + vaccine
	c.mu.Lock()
	d, ok := c.days[key]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	if err := c.pool.QueryRow(ctx, `SELECT booster_days FROM schedules WHERE species = $1 AND vaccine = $2`, species, vaccine).Scan(&d); err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.days[key] = d
	c.mu.Unlock()
	return d, nil
}
