package grading

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Store is what the service needs from persistence.
type Store interface {
	InsertMark(ctx context.Context, tx pgx.Tx, student, course string, mark int) error
	RefreshAverage(ctx context.Context, tx pgx.Tx, student, course string) error
}

// Service applies grading rules.
type Service struct {
	Store Store
}

// Record validates and stores a mark, then refreshes the average.
func (s Service) Record(ctx context.Context, tx pgx.Tx, student, course string, mark int) error {
	if mark < 0 || mark > 100 {
		return fmt.Errorf("grading: mark %d out of range", mark)
	}
	if err := s.Store.InsertMark(ctx, tx, student, course, mark); err != nil {
		return err
	}
	return s.Store.RefreshAverage(ctx, tx, student, course)
}
