// Package school consumes marks published by the assessment platform.
package school

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout6/school/grading"
)

type markPublished struct {
	Student string `json:"student"`
	Course  string `json:"course"`
	Mark    int    `json:"mark"`
}

type marksHandler struct {
	svc grading.Service
}

func (h marksHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("school: claim transaction missing")
	}
	return h.apply(ctx, tx, msg)
}

func (h marksHandler) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var m markPublished
	if err := json.Unmarshal(msg.Body, &m); err != nil {
		return consumer.Permanent(err)
	}
	if m.Mark < 0 || m.Mark > 100 {
		return consumer.Permanent(errors.New("school: mark out of range"))
	}
	return h.svc.Record(ctx, tx, m.Student, m.Course, m.Mark)
}

// Run starts the marks consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := marksHandler{svc: grading.Service{Store: grading.Repo{}}}
	c, err := consumer.New(src, h, consumer.Config{Name: "school-marks"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
