package seatlock

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Run issues tickets until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, redisAddr string) error {
	src, err := broker.Source(ctx, "shop.order-paid", "ticket-issuer")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	iss := &Issuer{locks: redis.NewClient(&redis.Options{Addr: redisAddr}), ttl: 30 * time.Second}
	c, err := consumer.New(src, iss, consumer.Config{Name: "ticket-issuer"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
