// Package marathon publishes official results once a race's timing mats
// close, with a signed checksum of the results file the federation asks for.
package marathon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the results service.
type Config struct {
	// ResultsTopic is the outbox destination of official results;
	// default "marathon.results".
	ResultsTopic string
	// ScratchDir is where result files are built; default os.TempDir().
	ScratchDir string
}

// Run consumes race-closed events until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.ResultsTopic == "" {
		cfg.ResultsTopic = "marathon.results"
	}
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("marathon: %w", err)
	}
	src, err := broker.Source(ctx, "timing.race-closed", "marathon-results")
	if err != nil {
		return fmt.Errorf("marathon: %w", err)
	}
	p := &publisher{cfg: cfg, log: log}
	c, err := consumer.New(src, postgres.HandlerFunc(p.raceClosed), consumer.Config{Name: "marathon-results"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("marathon: %w", err)
	}
	return c.Run(ctx)
}
