// Package cache keeps the vehicle-status cache table, a denormalised copy
// the dispatch UI reads.
package cache

import (
	"context"
	"database/sql"
)

// Status is the cache of vehicle statuses.
type Status struct {
	DB *sql.DB
}

// Invalidate drops vehicle's cached status so the next read rebuilds it.
func (s *Status) Invalidate(ctx context.Context, vehicle string) error {
	_, err := s.DB.ExecContext(ctx, `DELETE FROM vehicle_status_cache WHERE vehicle = $1`, vehicle)
	return err
}

// Get reads vehicle's cached status.
func (s *Status) Get(ctx context.Context, vehicle string) (string, error) {
	var st string
	err := s.DB.QueryRowContext(ctx, `SELECT status FROM vehicle_status_cache WHERE vehicle = $1`, vehicle).Scan(&st)
	return st, err
}
