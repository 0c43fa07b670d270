// Package regatta records race finishes and publishes provisional results.
package regatta

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the race office.
type Config struct {
	// ProtestWindow is how long after a finish results stay provisional;
	// default 20 minutes.
	ProtestWindow time.Duration
}

// RaceOffice records finishes.
type RaceOffice struct {
	cfg Config
	log *slog.Logger
}

// Run consumes finish-line records until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.ProtestWindow == 0 {
		cfg.ProtestWindow = 20 * time.Minute
	}
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("regatta: %w", err)
	}
	src, err := broker.Source(ctx, "regatta.finishes", "regatta-office")
	if err != nil {
		return fmt.Errorf("regatta: %w", err)
	}
	office := &RaceOffice{cfg: cfg, log: log}
	c, err := consumer.New(src, office, consumer.Config{Name: "regatta-office"}, middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("regatta: %w", err)
	}
	return c.Run(ctx)
}
