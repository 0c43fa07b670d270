// Package energy keeps the latest smart-meter reading per meter for the live dashboard.
package energy

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/redis/go-redis/v9"
)

type reading struct {
	Meter string    `json:"meter"`
	KWh   float64   `json:"kwh"`
	At    time.Time `json:"at"`
}

// Latest overwrites the latest reading; replays write the same values again.
type Latest struct {
	Redis *redis.Client
	Pool  *pgxpool.Pool
}

// Handle stores the reading as the meter's latest value.
func (l *Latest) Handle(ctx context.Context, msg *consumer.Message) error {
	var r reading
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	if err := l.Redis.Set(ctx, "meter:"+r.Meter, msg.Body, 24*time.Hour).Err(); err != nil {
		return err
	}
	_, err := l.Pool.Exec(ctx, `INSERT INTO latest_readings (meter, kwh, at) VALUES ($1, $2, $3)
ON CONFLICT (meter) DO UPDATE SET kwh = EXCLUDED.kwh, at = EXCLUDED.at WHERE latest_readings.at <= EXCLUDED.at`, r.Meter, r.KWh, r.At)
	return err
}

// Run starts the consumer; it needs no claim because every write is an idempotent overwrite.
func Run(ctx context.Context, src consumer.Source, l *Latest) error {
	c, err := consumer.New(src, l, consumer.Config{
		Name:        "energy-latest",
		Concurrency: 16,
		Duplicates:  consumer.AllowDuplicates("latest-value overwrite keyed by meter and timestamp"),
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
