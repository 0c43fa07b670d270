// Package telemetry ingests device readings in batches.
package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type reading struct {
	DeviceID string    `json:"device_id"`
	At       time.Time `json:"at"`
	Celsius  float64   `json:"celsius"`
}

// readingRows feeds decoded readings to CopyFrom.
type readingRows struct {
	rows []reading
	i    int
}

func (r *readingRows) Next() bool {
	r.i++
	return r.i <= len(r.rows)
}

func ingest(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	rows := make([]reading, 0, len(msgs))
	for _, m := range msgs {
		var r reading
		if err := json.Unmarshal(m.Body, &r); err != nil {
			return consumer.Permanent(fmt.Errorf("message %s: %w", m.ID, err))
		}
		rows = append(rows, r)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"readings"}, []string{"device_id", "at", "celsius"}, &readingRows{rows: rows}); err != nil {
		return fmt.Errorf("copy %d readings: %w", len(rows), err)
	}
	_, err := tx.Exec(ctx, `UPDATE devices SET last_seen = now() WHERE id = ANY($1)`, deviceIDs(rows))
	return err
}

func deviceIDs(rs []reading) []string {
	seen := map[string]bool{}
	var ids []string
	for _, r := range rs {
		if !seen[r.DeviceID] {
			seen[r.DeviceID] = true
			ids = append(ids, r.DeviceID)
		}
	}
	return ids
}

// Run consumes devices.readings in batches.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "devices.readings", "telemetry")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(ingest), consumer.Config{Name: "telemetry", Concurrency: 2},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
