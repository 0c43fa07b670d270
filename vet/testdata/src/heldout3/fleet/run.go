// Package fleet consumes vehicle telemetry and maintenance events.
package fleet

import (
	"context"
	"log/slog"

	"heldout3/fleet/internal/svc"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Run consumes both topics until ctx is done or one consumer fails.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	deps := svc.NewDeps(pool, log)
	routes := []struct {
		topic, name string
		h           consumer.Handler
	}{
		{"fleet.telemetry", "fleet-telemetry", &telemetryHandler{Deps: deps}},
		{"fleet.service-due", "fleet-maintenance", &maintenanceHandler{Deps: deps}},
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, r := range routes {
		src, err := broker.Source(ctx, r.topic, r.name)
		if err != nil {
			return err
		}
		c, err := consumer.New(src, r.h, consumer.Config{Name: r.name}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		g.Go(func() error { return c.Run(gctx) })
	}
	return g.Wait()
}
