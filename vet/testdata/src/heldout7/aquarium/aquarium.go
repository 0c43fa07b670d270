// Package aquarium records tank water-quality samples from the
// aquarists' handheld meters and tracks each tank's dosing.
package aquarium

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Config configures the sample consumer.
type Config struct {
	// Topic carries meter samples; default "aquarium.samples".
	Topic string
	// Trace logs every sample's handling time when set.
	Trace bool
	// Concurrency bounds samples in flight; default 4.
	Concurrency int
}

// timing logs how long each sample took.
func timing(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, msg)
			log.Debug("sample handled", "id", msg.ID, "took", time.Since(start), "err", err)
			return err
		})
	}
}

// Run consumes samples until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.Topic == "" {
		cfg.Topic = "aquarium.samples"
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	src, err := broker.Source(ctx, cfg.Topic, "aquarium-samples")
	if err != nil {
		return fmt.Errorf("aquarium: %w", err)
	}
	mws := []consumer.Middleware{middleware.Logging()}
	if cfg.Trace {
		mws = append(mws, timing(log))
	}
	h := &sampleHandler{pool: pool, log: log}
	c, err := consumer.New(src, h, consumer.Config{Name: "aquarium-samples", Concurrency: cfg.Concurrency}, mws...) // want "idempotency"
	if err != nil {
		return fmt.Errorf("aquarium: %w", err)
	}
	return c.Run(ctx)
}
