// Package pgtrack records scans in Postgres. Inside a consumer handler it
// joins the claim's transaction (postgres.Tx); the tracking API, which
// runs outside any handler, writes through the pool.
package pgtrack

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/courier/parcel"
	"heldout8/shared/tenant"
)

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

// Tracker is the Postgres parcel.Tracker.
type Tracker struct {
	pool *pgxpool.Pool
}

// New returns a tracker.
func New(pool *pgxpool.Pool) *Tracker { return &Tracker{pool: pool} }

// db is the claim's transaction when ctx carries one, else the pool.
func (t *Tracker) db(ctx context.Context) querier {
	if tx, ok := postgres.Tx(ctx); ok {
		return tx
	}
	return t.pool
}

// RecordScan appends s to the parcel's history.
func (t *Tracker) RecordScan(ctx context.Context, s parcel.Scan) error {
	_, err := t.db(ctx).Exec(ctx, `INSERT INTO parcel_scans (tenant, barcode, depot, status, at) VALUES ($1, $2, $3, $4, $5)`,
		tenant.From(ctx), s.Barcode, s.Depot, s.Status, s.At)
	return err
}

// CloseParcel marks the parcel delivered.
func (t *Tracker) CloseParcel(ctx context.Context, barcode string, at time.Time) error {
	_, err := t.db(ctx).Exec(ctx, `UPDATE parcels SET delivered_at = $3 WHERE tenant = $1 AND barcode = $2`,
		tenant.From(ctx), barcode, at)
	return err
}
