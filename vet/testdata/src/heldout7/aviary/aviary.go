// Package aviary records bird-ringing sessions: each batch of ring records
// is validated in parallel, then booked at once.
package aviary

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the ringing consumer.
type Config struct {
	// Workers bounds the parallel validation of a batch; default GOMAXPROCS.
	Workers int
}

// Ringers books ring records.
type Ringers struct {
	workers int
	log     *slog.Logger
}

// Run consumes ring records until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("aviary: %w", err)
	}
	src, err := broker.Source(ctx, "aviary.rings", "aviary-ringing")
	if err != nil {
		return fmt.Errorf("aviary: %w", err)
	}
	r := &Ringers{workers: cfg.Workers, log: log}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(r.book), consumer.Config{Name: "aviary-ringing"},
		middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("aviary: %w", err)
	}
	return c.Run(ctx)
}
