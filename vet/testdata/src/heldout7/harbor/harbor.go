// Package harbor tracks vessels in the harbour: their last AIS position
// and their berth bookings.
package harbor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Config names the topics; zero values take the defaults.
type Config struct {
	// PositionsTopic carries AIS position reports; default "ais.positions".
	PositionsTopic string
	// BerthsTopic carries berth bookings; default "harbor.berths".
	BerthsTopic string
}

// Run consumes positions and berth bookings until ctx ends or either
// consumer fails.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.PositionsTopic == "" {
		cfg.PositionsTopic = "ais.positions"
	}
	if cfg.BerthsTopic == "" {
		cfg.BerthsTopic = "harbor.berths"
	}
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("harbor: %w", err)
	}
	positionsSrc, err := broker.Source(ctx, cfg.PositionsTopic, "harbor-positions")
	if err != nil {
		return err
	}
	berthsSrc, err := broker.Source(ctx, cfg.BerthsTopic, "harbor-berths")
	if err != nil {
		return err
	}

	positions, err := consumer.New(positionsSrc, &positionTracker{pool: pool}, consumer.Config{
		Name:        "harbor-positions",
		Concurrency: 16,
		Duplicates:  consumer.AllowDuplicates("last-position upsert guarded by reported_at: a replayed report changes nothing"),
	}, middleware.Logging())
	if err != nil {
		return err
	}
	berths, err := consumer.New(berthsSrc, postgres.HandlerFunc((&berthDesk{log: log}).book), consumer.Config{
		Name: "harbor-berths",
	}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return positions.Run(gctx) })
	g.Go(func() error { return berths.Run(gctx) })
	return g.Wait()
}
