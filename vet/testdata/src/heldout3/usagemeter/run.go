// Package usagemeter aggregates metered usage per tenant.
package usagemeter

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Run consumes usage events until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, redisAddr string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "billing.usage", "usagemeter")
	if err != nil {
		return err
	}
	m := &meter{rdb: redis.NewClient(&redis.Options{Addr: redisAddr})}
	c, err := consumer.New(src, m.handler(), consumer.Config{Name: "usagemeter", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
