// Package marina allocates berths to arriving vessels.
package marina

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BerthRepo writes berth allocations in the caller's transaction.
type BerthRepo struct{}

// Allocate gives the berth to the vessel.
func (BerthRepo) Allocate(ctx context.Context, tx pgx.Tx, berth, vessel string) error {
	_, err := tx.Exec(ctx, `UPDATE berths SET vessel = $2, since = now() WHERE id = $1`, berth, vessel)
	return err
}

// TideReader reads the tide tables.
type TideReader struct {
	Pool *pgxpool.Pool
}

// MinDepthCm returns the lowest tide height of the day at the berth.
func (t TideReader) MinDepthCm(ctx context.Context, berth string) (int, error) {
	var d int
	err := t.Pool.QueryRow(ctx, `SELECT min_depth_cm FROM tide_forecast WHERE berth = $1 AND day = current_date`, berth).Scan(&d)
	return d, err
}
