package orchard

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Run consumes scale readings from Redis Streams.
func Run(ctx context.Context, pool *pgxpool.Pool, redisAddr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	scale := &Scale{prices: priceBoard{rdb: rdb}}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "redis://"+redisAddr+"/1")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "scale.readings", "crate-recorder")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(scale.Weigh), consumer.Config{Name: "crate-recorder"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
