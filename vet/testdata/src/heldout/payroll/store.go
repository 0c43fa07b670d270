package payroll

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// querier is satisfied by *pgxpool.Pool and pgx.Tx.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store is payroll's persistence.
type Store interface {
	AddHours(ctx context.Context, employeeID string, day time.Time, minutes int) error
	ApproveRun(ctx context.Context, runID, approver string) error
}

type sqlStore struct {
	db querier
}

func newStore(db querier) Store { return sqlStore{db: db} }

func (s sqlStore) AddHours(ctx context.Context, employeeID string, day time.Time, minutes int) error {
	_, err := s.db.Exec(ctx,
		`INSERT INTO timesheets (employee_id, day, minutes) VALUES ($1, $2, $3)
		 ON CONFLICT (employee_id, day) DO UPDATE SET minutes = EXCLUDED.minutes`, employeeID, day, minutes)
	return err
}

func (s sqlStore) ApproveRun(ctx context.Context, runID, approver string) error {
	_, err := s.db.Exec(ctx, `UPDATE payroll_runs SET approved_by = $2, approved_at = now() WHERE id = $1`, runID, approver)
	return err
}
