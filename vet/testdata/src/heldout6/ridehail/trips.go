// Package ridehail settles completed trips in batches.
package ridehail

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type tripCompleted struct {
	TripID   string `json:"trip_id"`
	DriverID string `json:"driver_id"`
	FareCts  int64  `json:"fare_cents"`
}

type settler struct {
	pool *pgxpool.Pool
}

func (s *settler) settle(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	trips := &pgx.Batch{}
	earnings := &pgx.Batch{}
	for _, m := range msgs {
		var t tripCompleted
		if err := json.Unmarshal(m.Body, &t); err != nil {
			return consumer.Permanent(err)
		}
		trips.Queue(`INSERT INTO settled_trips (id, fare_cents) VALUES ($1, $2)`, t.TripID, t.FareCts)
		earnings.Queue(`UPDATE driver_earnings SET pending_cents = pending_cents + $2 WHERE driver_id = $1`, t.DriverID, t.FareCts)
	}
	if err := tx.SendBatch(ctx, trips).Close(); err != nil {
		return err
	}
	return s.pool.SendBatch(ctx, earnings).Close() // want "pool write inside transactional handler"
}

// Run starts the batch settler.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	s := &settler{pool: pool}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(s.settle), consumer.Config{Name: "ridehail-settle"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
