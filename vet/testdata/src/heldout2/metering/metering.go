// Package metering accumulates API usage per tenant and hour.
package metering

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

var errNoClaim = errors.New("metering: no claim transaction")

// Meter adds API calls to the tenant's hourly bucket.
type Meter struct {
	bucket time.Duration
}

// Handle runs in the claim's transaction.
func (m Meter) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoClaim
	}
	calls, err := strconv.Atoi(msg.Headers["calls"])
	if err != nil {
		return consumer.Permanent(err)
	}
	hour := time.Now().Truncate(m.bucket)
	_, err = tx.Exec(ctx, `INSERT INTO usage_hourly (tenant, hour, calls) VALUES ($1, $2, $3)
		ON CONFLICT (tenant, hour) DO UPDATE SET calls = usage_hourly.calls + $3`, msg.Key, hour, calls)
	return err
}

// Run wires the meter.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) (*progress, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	src, err := broker.Source(ctx, "api.calls", "metering")
	if err != nil {
		return nil, err
	}
	p := &progress{}
	c, err := consumer.New(src, Meter{bucket: time.Hour}, consumer.Config{Name: "metering"}, p.middleware(), middleware.Idempotency(st))
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Run(ctx) }()
	return p, nil
}
