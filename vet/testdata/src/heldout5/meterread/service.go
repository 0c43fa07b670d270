// Package meterread stores smart-meter readings.
package meterread

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout5/meterread/db"
)

var errNoClaim = errors.New("meterread: no claim transaction in context")

// Handler stores readings.
type Handler struct {
	q *db.Queries
}

// Handle stores one reading and moves the meter's total.
func (h *Handler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoClaim
	}
	var r db.InsertReadingParams
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	if err := h.q.WithTx(tx).InsertReading(ctx, r); err != nil {
		return err
	}
	return h.q.BumpMeterTotal(ctx, r.MeterID, r.Kwh) // want "meter total updated outside the claim transaction"
}

// Run consumes readings until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "meter.readings", "meterread")
	if err != nil {
		return err
	}
	h := &Handler{q: db.New(pool)}
	c, err := consumer.New(src, h, consumer.Config{Name: "meterread", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
