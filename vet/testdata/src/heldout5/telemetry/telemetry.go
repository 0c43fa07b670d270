// Package telemetry stores soil sensor readings. Readings are upserts keyed by
// sensor and timestamp, so a redelivery rewrites the same row.
package telemetry

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

type reading struct {
	SensorID string  `json:"sensor_id"`
	At       int64   `json:"at"`
	Moisture float64 `json:"moisture"`
	TempC    float64 `json:"temp_c"`
}

// Sink writes readings.
type Sink struct {
	pool *pgxpool.Pool
}

// Handle upserts one reading.
func (s *Sink) Handle(ctx context.Context, msg *consumer.Message) error {
	var r reading
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO soil_readings (sensor_id, at, moisture, temp_c) VALUES ($1, to_timestamp($2), $3, $4)
		ON CONFLICT (sensor_id, at) DO UPDATE SET moisture = excluded.moisture, temp_c = excluded.temp_c`, r.SensorID, r.At, r.Moisture, r.TempC)
	return err
}

// Run consumes sensor readings.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "soil.readings", "telemetry")
	if err != nil {
		return err
	}
	cfg := consumer.Config{
		Name:        "telemetry",
		Concurrency: 16,
		Duplicates:  consumer.AllowDuplicates("readings are upserts keyed by (sensor_id, at)"),
	}
	c, err := consumer.New(src, &Sink{pool: pool}, cfg, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
