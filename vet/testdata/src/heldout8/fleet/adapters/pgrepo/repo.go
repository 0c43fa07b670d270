// Package pgrepo is the Postgres adapter of domain.VehicleRepository.
package pgrepo

import (
	"context"

	"github.com/jackc/pgx/v5"

	"heldout8/fleet/domain"
)

// DBTX is what the repository runs statements on: a pool or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Repo stores vehicles in the vehicles table.
type Repo struct {
	db DBTX
}

// New returns a repository over db.
func New(db DBTX) *Repo { return &Repo{db: db} }

// Get loads one vehicle.
func (r *Repo) Get(ctx context.Context, id string) (domain.Vehicle, error) {
	v := domain.Vehicle{ID: id}
	err := r.db.QueryRow(ctx, `SELECT plate, odometer_km, service_due FROM vehicles WHERE id = $1`, id).
		Scan(&v.Plate, &v.OdometerKm, &v.ServiceDue)
	return v, err
}

// Save upserts the vehicle.
func (r *Repo) Save(ctx context.Context, v domain.Vehicle) error {
	_, err := r.db.Exec(ctx, `INSERT INTO vehicles (id, plate, odometer_km, service_due) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET odometer_km = EXCLUDED.odometer_km, service_due = EXCLUDED.service_due`,
		v.ID, v.Plate, v.OdometerKm, v.ServiceDue)
	return err
}
