// Package service applies enrollment changes.
package service

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"heldout5/enrollsync/store"
)

// Change is one enrollment change.
type Change struct {
	StudentID string `json:"student_id"`
	CourseID  string `json:"course_id"`
	Status    string `json:"status"`
}

// Sync applies changes through the store.
type Sync struct {
	Store *store.Enrollments
}

// Apply writes the change in tx, and its history row when the enrollment
// already existed.
func (s *Sync) Apply(ctx context.Context, tx pgx.Tx, c Change) error {
	existed, err := s.Store.Exists(ctx, c.StudentID, c.CourseID)
	if err != nil {
		return fmt.Errorf("exists: %w", err)
	}
	if err := s.Store.Upsert(ctx, tx, c.StudentID, c.CourseID, c.Status); err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	if !existed {
		return nil
	}
	return s.record(ctx, tx, c)
}

func (s *Sync) record(ctx context.Context, tx pgx.Tx, c Change) error {
	return s.Store.LogChange(ctx, tx, c.StudentID, c.CourseID, c.Status)
}
