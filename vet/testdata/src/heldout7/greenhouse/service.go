// Package greenhouse ingests climate sensor readings and opens alarms for
// zones that leave their range.
package greenhouse

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/internal/climatedb"
)

// Config configures the ingest service; zero values take the defaults.
type Config struct {
	// Topic is the readings topic; default "greenhouse.readings".
	Topic string
	// Concurrency bounds in-flight readings; default 8.
	Concurrency int
}

func (c Config) withDefaults() Config {
	if c.Topic == "" {
		c.Topic = "greenhouse.readings"
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	return c
}

// Service holds the ingest's dependencies.
type Service struct {
	queries *climatedb.Queries
	log     *slog.Logger
}

// NewService returns a service whose queries run on pool outside a message.
func NewService(pool *pgxpool.Pool, log *slog.Logger) *Service {
	return &Service{queries: climatedb.New(pool), log: log}
}

// Run consumes readings until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	cfg = cfg.withDefaults()
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("greenhouse: store: %w", err)
	}
	src, err := broker.Source(ctx, cfg.Topic, "greenhouse-ingest")
	if err != nil {
		return fmt.Errorf("greenhouse: source: %w", err)
	}
	svc := NewService(pool, log)
	c, err := consumer.New(src, postgres.HandlerFunc(svc.ingest), consumer.Config{
		Name:        "greenhouse-ingest",
		Concurrency: cfg.Concurrency,
	}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("greenhouse: consumer: %w", err)
	}
	return c.Run(ctx)
}
