// Package fleettelemetry stores GPS and engine readings from delivery vans.
package fleettelemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type reading struct {
	VehicleID string    `json:"vehicle_id"`
	At        time.Time `json:"at"`
	Lat       float64   `json:"lat"`
	Lon       float64   `json:"lon"`
	Odometer  int64     `json:"odometer_m"`
}

type readingRows struct {
	rs []reading
	i  int
}

func (r *readingRows) Next() bool { r.i++; return r.i <= len(r.rs) }

// Ingest writes batches of readings.
type Ingest struct {
	pool *pgxpool.Pool
}

func (in *Ingest) handleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	rs := make([]reading, 0, len(msgs))
	latest := map[string]reading{}
	for _, m := range msgs {
		var r reading
		if err := json.Unmarshal(m.Body, &r); err != nil {
			return consumer.Permanent(fmt.Errorf("decode reading %s: %w", m.ID, err))
		}
		rs = append(rs, r)
		if prev, ok := latest[r.VehicleID]; !ok || r.At.After(prev.At) {
			latest[r.VehicleID] = r
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"telemetry", "readings"},
		[]string{"vehicle_id", "at", "lat", "lon", "odometer_m"}, &readingRows{rs: rs}); err != nil {
		return fmt.Errorf("copy readings: %w", err)
	}
	b := &pgx.Batch{}
	for id, r := range latest {
		b.Queue(`UPDATE vehicles SET last_seen = $2, odometer_m = GREATEST(odometer_m, $3) WHERE id = $1`, id, r.At, r.Odometer)
	}
	return in.pool.SendBatch(ctx, b).Close() // want "vehicle positions sent as a batch through the pool, outside the claim transaction"
}
