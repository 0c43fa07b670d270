// Package circus sells show tickets at the big top's gates and keeps a
// health page showing the consumer's progress.
package circus

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the gate service.
type Config struct {
	// SlowAfter is how long a sale may take before it is logged as slow;
	// default 2s.
	SlowAfter time.Duration
	// ReleaseEvery is how often unpaid holds are released; default 1m.
	ReleaseEvery time.Duration
}

// Gates sells tickets.
type Gates struct {
	cfg      Config
	log      *slog.Logger
	lastID   atomic.Value // string: the last message handled
	lastAt   atomic.Int64 // unix nanoseconds of the last message handled
	handled  atomic.Int64
	inFlight atomic.Int32
}

// Health serves GET /healthz with the consumer's progress.
func (g *Gates) Health(w http.ResponseWriter, _ *http.Request) {
	id, _ := g.lastID.Load().(string)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"last_message": id,
		"last_at":      time.Unix(0, g.lastAt.Load()),
		"handled":      g.handled.Load(),
		"in_flight":    g.inFlight.Load(),
	})
}

// Run releases stale holds in the background and sells tickets until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.SlowAfter == 0 {
		cfg.SlowAfter = 2 * time.Second
	}
	if cfg.ReleaseEvery == 0 {
		cfg.ReleaseEvery = time.Minute
	}
	g := &Gates{cfg: cfg, log: log}
	go g.releaseHolds(ctx, pool)

	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("circus: %w", err)
	}
	src, err := broker.Source(ctx, "circus.gate-sales", "circus-gates")
	if err != nil {
		return fmt.Errorf("circus: %w", err)
	}
	c, err := consumer.New(src, postgres.HandlerFunc(g.sell), consumer.Config{Name: "circus-gates", Concurrency: 4},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("circus: %w", err)
	}
	return c.Run(ctx)
}

// releaseHolds frees seats held for more than ten minutes without payment,
// each round in a transaction of its own.
func (g *Gates) releaseHolds(ctx context.Context, pool *pgxpool.Pool) {
	t := time.NewTicker(g.cfg.ReleaseEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			tx, err := pool.Begin(ctx)
			if err != nil {
				g.log.Warn("release holds", "err", err)
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE seats SET held_by = NULL, held_at = NULL WHERE held_at < now() - interval '10 minutes'`); err != nil {
				g.log.Warn("release holds", "err", err)
				_ = tx.Rollback(ctx)
				continue
			}
			if err := tx.Commit(ctx); err != nil {
				g.log.Warn("release holds", "err", err)
			}
		}
	}
}
