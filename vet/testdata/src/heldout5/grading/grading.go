// Package grading records exam grades.
package grading

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

type graded struct {
	ExamID    string `json:"exam_id"`
	StudentID string `json:"student_id"`
	Score     int    `json:"score"`
}

// Recorder writes grades and bumps the exam's graded count.
type Recorder struct {
	pool *pgxpool.Pool
}

// Handle records one grade in a transaction of its own.
func (r *Recorder) Handle(ctx context.Context, msg *consumer.Message) error {
	var g graded
	if err := json.Unmarshal(msg.Body, &g); err != nil {
		return consumer.Permanent(err)
	}
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO grades (exam_id, student_id, score) VALUES ($1, $2, $3)`, g.ExamID, g.StudentID, g.Score); err != nil {
		return fmt.Errorf("insert grade: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE exams SET graded = graded + 1 WHERE id = $1`, g.ExamID); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Run consumes grades.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "exams.graded", "grading")
	if err != nil {
		return err
	}
	cfg := consumer.Config{Name: "grading", Concurrency: 4}
	mws := []consumer.Middleware{middleware.Logging()}
	c, err := consumer.New(src, &Recorder{pool: pool}, cfg, mws...) // want "grading consumer has no idempotency"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
