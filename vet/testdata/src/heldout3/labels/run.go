// Package labels requests carrier labels for packed shipments.
package labels

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Run consumes packed shipments until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, rdb *redis.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "warehouse.packed", "labels")
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	p := &planner{rdb: rdb, instance: host}
	c, err := consumer.New(src, postgres.HandlerFunc(p.onPacked), consumer.Config{Name: "labels"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
