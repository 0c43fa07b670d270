// Package geofence records assets entering and leaving geofences.
package geofence

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Run consumes fence crossings until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	src, err := broker.Source(ctx, "tracking.fence-crossed", "geofence")
	if err != nil {
		return err
	}
	h := consumer.Chain(&crossingHandler{pool: pool}, middleware.Logging(), timing(log, 250*time.Millisecond))
	c, err := consumer.New(src, h, consumer.Config{Name: "geofence", Concurrency: 16}) // want "consumer of a chain without idempotency and without an AllowDuplicates opt-out"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
