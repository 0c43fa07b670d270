// Package pgberths keeps berths in Postgres.
package pgberths

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"heldout8/harbor/berths"
)

// DBTX is a pool or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Repo is the Postgres berths.Repository.
type Repo struct{ db DBTX }

// New returns a repository over db.
func New(db DBTX) *Repo { return &Repo{db: db} }

// Find loads a berth.
func (r *Repo) Find(ctx context.Context, id string) (berths.Berth, error) {
	b := berths.Berth{ID: id}
	err := r.db.QueryRow(ctx, `SELECT max_draft, coalesce(occupant, ''), coalesce(until, 'epoch') FROM berths WHERE id = $1`, id).
		Scan(&b.MaxDraft, &b.Occupant, &b.Until)
	return b, err
}

// Assign gives the berth to vessel until until.
func (r *Repo) Assign(ctx context.Context, id, vessel string, until time.Time) error {
	_, err := r.db.Exec(ctx, `UPDATE berths SET occupant = $2, until = $3 WHERE id = $1`, id, vessel, until)
	return err
}
