// Package seating is the stadium's seat map: holds, sales and availability.
package seating

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"heldout7/platform/pgutil"
)

// ErrTaken means the seat is already sold.
var ErrTaken = errors.New("seating: seat taken")

// Map reads availability through its pool; every write goes through the
// handle its caller passes, so it joins the caller's transaction.
type Map struct {
	pool *pgxpool.Pool
}

// NewMap returns the seat map over pool.
func NewMap(pool *pgxpool.Pool) *Map { return &Map{pool: pool} }

// Available counts the unsold seats of a fixture's section.
func (m *Map) Available(ctx context.Context, fixture, section string) (int, error) {
	var n int
	err := m.pool.QueryRow(ctx, `SELECT count(*) FROM seats WHERE fixture = $1 AND section = $2 AND sold_to IS NULL`, fixture, section).Scan(&n)
	return n, err
}

// Sell sells a seat on db.
func (m *Map) Sell(ctx context.Context, db pgutil.DBTX, fixture, seat, fan string) error {
	var sold bool
	if err := db.QueryRow(ctx, `UPDATE seats SET sold_to = $3 WHERE fixture = $1 AND id = $2 AND sold_to IS NULL RETURNING true`,
		fixture, seat, fan).Scan(&sold); err != nil {
		return fmt.Errorf("sell %s/%s: %w", fixture, seat, ErrTaken)
	}
	return nil
}

// Release frees a held seat on db.
func (m *Map) Release(ctx context.Context, db pgutil.DBTX, fixture, seat string) error {
	_, err := db.Exec(ctx, `UPDATE seats SET held_until = NULL WHERE fixture = $1 AND id = $2`, fixture, seat)
	return err
}
