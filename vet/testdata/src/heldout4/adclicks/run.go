package adclicks

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/redis/go-redis/v9"
)

// Run counts clicks until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "tracker.clicks", "live-click-counter")
	if err != nil {
		return err
	}
	cfg := consumer.Config{
		Name:        "live-click-counter",
		Concurrency: 64,
		Duplicates:  consumer.AllowDuplicates("dashboard estimate only; billing recounts from the raw click log"),
	}
	c, err := consumer.New(src, &Counter{rdb: rdb, pool: pool}, cfg, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
