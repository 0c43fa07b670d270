package meterreads

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// tariffs looks prices up on the pool: the tariff table is reference data
// published by the pricing team, never written by this service.
type tariffs struct {
	pool *pgxpool.Pool
}

func (t *tariffs) priceAt(ctx context.Context, plan string, at time.Time) (int64, error) {
	var microsPerWh int64
	err := t.pool.QueryRow(ctx,
		`SELECT micros_per_wh FROM tariffs WHERE plan = $1 AND valid_from <= $2 ORDER BY valid_from DESC LIMIT 1`,
		plan, at).Scan(&microsPerWh)
	if err != nil {
		return 0, fmt.Errorf("tariff %s at %s: %w", plan, at, err)
	}
	return microsPerWh, nil
}
