// Package grading stores marks and term averages.
package grading

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Repo writes grades in the caller's transaction.
type Repo struct{}

// InsertMark stores one assessment mark.
func (Repo) InsertMark(ctx context.Context, tx pgx.Tx, student, course string, mark int) error {
	_, err := tx.Exec(ctx, `INSERT INTO marks (student, course, mark) VALUES ($1, $2, $3)`, student, course, mark)
	return err
}

// RefreshAverage recomputes the term average.
func (Repo) RefreshAverage(ctx context.Context, tx pgx.Tx, student, course string) error {
	_, err := tx.Exec(ctx, `UPDATE averages SET avg = (SELECT avg(mark) FROM marks WHERE student = $1 AND course = $2) WHERE student = $1 AND course = $2`, student, course)
	return err
}
