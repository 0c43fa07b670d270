// Package tollroad books gantry passages against prepaid toll accounts, a
// batch of passages at a time.
package tollroad

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the passage consumer.
type Config struct {
	// BrokerURL is the broker to consume from; required.
	BrokerURL string
	// Topic carries gantry passages; default "gantry.passages".
	Topic string
}

// Booker books passages; it keeps the pool for its account reads.
type Booker struct {
	db  *pgxpool.Pool
	log *slog.Logger
}

// Run books passages until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, cfg Config, log *slog.Logger) error {
	if cfg.BrokerURL == "" {
		return errors.New("tollroad: BrokerURL is required")
	}
	if cfg.Topic == "" {
		cfg.Topic = "gantry.passages"
	}
	broker, err := adapters.Open(ctx, cfg.BrokerURL)
	if err != nil {
		return fmt.Errorf("tollroad: open broker: %w", err)
	}
	src, err := broker.Source(ctx, cfg.Topic, "tollroad-booker")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b := &Booker{db: pool, log: log}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(b.bookBatch),
		consumer.Config{Name: "tollroad-booker", Concurrency: 2},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
