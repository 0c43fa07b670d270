// Package enrollment reserves course seats for batches of enrollment requests.
package enrollment

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type request struct {
	StudentID string `json:"student_id"`
	CourseID  string `json:"course_id"`
}

// Service reserves seats.
type Service struct {
	pool *pgxpool.Pool
}

// HandleBatch records the batch and reserves a seat per request.
func (s *Service) HandleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	for _, m := range msgs {
		var r request
		if err := json.Unmarshal(m.Body, &r); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO enrollments (student_id, course_id) VALUES ($1, $2)`, r.StudentID, r.CourseID); err != nil {
			return err
		}
		// Seat counts are hot rows: reserve each in a short transaction of its own.
		err := pgx.BeginFunc(ctx, s.pool, func(seat pgx.Tx) error { // want "seat reserved in a transaction of its own"
			_, err := seat.Exec(ctx, `UPDATE courses SET seats_taken = seats_taken + 1 WHERE id = $1`, r.CourseID)
			return err
		})
		if err != nil {
			return fmt.Errorf("reserve seat in %s: %w", r.CourseID, err)
		}
	}
	return nil
}

// Run consumes enrollment requests.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	s := &Service{pool: pool}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(s.HandleBatch), consumer.Config{Name: "enrollment"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
