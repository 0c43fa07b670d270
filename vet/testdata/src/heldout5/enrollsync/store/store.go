// Package store persists enrollments from the student information system.
package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Enrollments reads and writes enrollment rows.
type Enrollments struct {
	Pool *pgxpool.Pool
}

// Exists reports whether the student is already enrolled; it reads through the pool.
func (e *Enrollments) Exists(ctx context.Context, studentID, courseID string) (bool, error) {
	var n int
	err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM enrollments WHERE student_id = $1 AND course_id = $2`, studentID, courseID).Scan(&n)
	return n > 0, err
}

// Upsert writes one enrollment in tx.
func (e *Enrollments) Upsert(ctx context.Context, tx pgx.Tx, studentID, courseID, status string) error {
	_, err := tx.Exec(ctx, `INSERT INTO enrollments (student_id, course_id, status) VALUES ($1, $2, $3)
		ON CONFLICT (student_id, course_id) DO UPDATE SET status = excluded.status`, studentID, courseID, status)
	return err
}

// LogChange appends to the enrollment history in tx.
func (e *Enrollments) LogChange(ctx context.Context, tx pgx.Tx, studentID, courseID, status string) error {
	_, err := tx.Exec(ctx, `INSERT INTO enrollment_history (student_id, course_id, status) VALUES ($1, $2, $3)`, studentID, courseID, status)
	return err
}
