// Package decorated is a corpus repository (see vet/corpus_test.go): a
// Postgres adapter of the Vehicles port over a pool or a transaction, and
// a logging decorator of the port.
package decorated

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// Vehicles is the port.
type Vehicles interface {
	Odometer(ctx context.Context, id string) (int64, error)
	SetOdometer(ctx context.Context, id string, km int64) error
}

// DBTX is a pool or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Repo is the Postgres adapter.
type Repo struct{ db DBTX }

// New returns a repository over db.
func New(db DBTX) *Repo { return &Repo{db: db} }

// Odometer reads a vehicle's odometer.
func (r *Repo) Odometer(ctx context.Context, id string) (int64, error) {
	var km int64
	err := r.db.QueryRow(ctx, `SELECT km FROM vehicles WHERE id = $1`, id).Scan(&km)
	return km, err
}

// SetOdometer writes a vehicle's odometer.
func (r *Repo) SetOdometer(ctx context.Context, id string, km int64) error {
	_, err := r.db.Exec(ctx, `UPDATE vehicles SET km = $2 WHERE id = $1`, id, km)
	return err
}

type logged struct {
	next Vehicles
	log  *slog.Logger
}

// Logged returns next with every write logged.
func Logged(next Vehicles, log *slog.Logger) Vehicles { return &logged{next: next, log: log} }

func (l *logged) Odometer(ctx context.Context, id string) (int64, error) {
	return l.next.Odometer(ctx, id)
}

func (l *logged) SetOdometer(ctx context.Context, id string, km int64) error {
	l.log.InfoContext(ctx, "set odometer", "id", id, "km", km)
	return l.next.SetOdometer(ctx, id, km)
}
