// Package metering bills API calls from Kafka and exports per-tenant handler
// timings through a small sampler goroutine.
package metering

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	Kafka string
	Pool  *pgxpool.Pool
	Log   *slog.Logger
}

type sample struct {
	tenant string
	took   time.Duration
}

// Run consumes API call records until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	samples := make(chan sample, 1024)
	go func() {
		totals := map[string]time.Duration{}
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-samples:
				totals[s.tenant] += s.took
			case <-t.C:
				for tenant, d := range totals {
					cfg.Log.Info("metering time", "tenant", tenant, "handler_ms", d.Milliseconds())
				}
				clear(totals)
			}
		}
	}()

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "api-calls", "metering")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		start := time.Now()
		var call struct {
			Tenant   string `json:"tenant"`
			Endpoint string `json:"endpoint"`
			Units    int64  `json:"units"`
		}
		if err := json.Unmarshal(msg.Body, &call); err != nil {
			return consumer.Permanent(err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO usage (tenant_id, endpoint, units, message_id) VALUES ($1, $2, $3, $4)`, call.Tenant, call.Endpoint, call.Units, msg.ID)
		select {
		case samples <- sample{tenant: call.Tenant, took: time.Since(start)}:
		default: // sampler busy: drop the sample, never block billing
		}
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "metering", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
