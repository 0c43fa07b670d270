// Package brewpub draws down keg levels from the taps' flow meters.
package brewpub

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

// Config configures the cellar service; zero values take the defaults.
type Config struct {
	// Retention is how long pour rows are kept; default 90 days.
	Retention time.Duration
	// PruneEvery is how often old pours are pruned; default 1 hour.
	PruneEvery time.Duration
}

// Cellar tracks kegs.
type Cellar struct {
	pool *pgxpool.Pool
	cfg  Config
	log  *slog.Logger
}

const schema = `CREATE TABLE IF NOT EXISTS pours (
	tap int NOT NULL, keg text NOT NULL, ml int NOT NULL, poured_at timestamptz NOT NULL
)`

// Run prepares the schema, prunes old pours in the background and consumes
// flow-meter readings until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.Retention == 0 {
		cfg.Retention = 90 * 24 * time.Hour
	}
	if cfg.PruneEvery == 0 {
		cfg.PruneEvery = time.Hour
	}
	if _, err := pool.Exec(ctx, schema); err != nil {
		return fmt.Errorf("brewpub: schema: %w", err)
	}
	c := &Cellar{pool: pool, cfg: cfg, log: log}
	go c.pruneLoop(ctx)

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "taps.flow", "brewpub-cellar")
	if err != nil {
		return err
	}
	cons, err := consumer.New(src, postgres.BatchHandlerFunc(c.pours), consumer.Config{Name: "brewpub-cellar"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}

func (c *Cellar) pruneLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.PruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := c.pool.Exec(ctx, `DELETE FROM pours WHERE poured_at < now() - $1::interval`, c.cfg.Retention.String()); err != nil {
				c.log.Warn("prune pours", "err", err)
			}
		}
	}
}
