package geofence

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run watches positions until ctx ends; zonesOf returns a fleet's fences from
// the in-memory cache refreshed by the zone service.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, zonesOf func(string) []zone) error {
	src, err := broker.Source(ctx, "iot.position", "geofence")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	w := &Watcher{zones: zonesOf}
	c, err := consumer.New(src, postgres.HandlerFunc(w.onPosition), consumer.Config{Name: "geofence", Concurrency: 16}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
