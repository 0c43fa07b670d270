package shiftswap

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// shiftRepo reads and reassigns rota shifts on its current transaction.
type shiftRepo struct {
	tx pgx.Tx
}

type shift struct {
	ID         string
	EmployeeID string
	Start, End time.Time
	Role       string
}

func (r *shiftRepo) get(ctx context.Context, id string) (shift, error) {
	var s shift
	err := r.tx.QueryRow(ctx, `SELECT id, employee_id, starts_at, ends_at, role FROM shifts WHERE id = $1 FOR UPDATE`, id).
		Scan(&s.ID, &s.EmployeeID, &s.Start, &s.End, &s.Role)
	if err != nil {
		return shift{}, fmt.Errorf("shift %s: %w", id, err)
	}
	return s, nil
}

func (r *shiftRepo) assign(ctx context.Context, shiftID, employeeID string) error {
	_, err := r.tx.Exec(ctx, `UPDATE shifts SET employee_id = $2 WHERE id = $1`, shiftID, employeeID)
	return err
}
