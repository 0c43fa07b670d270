package matchmaking

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Run records match results until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, brokerURL, redisAddr string) error {
	broker, err := adapters.Open(ctx, brokerURL)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "games.match-finished", "ranked-results")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	rec := &ResultRecorder{ratings: &ratingRepo{}, cache: redis.NewClient(&redis.Options{Addr: redisAddr}), k: 32}
	c, err := consumer.New(src, rec, consumer.Config{Name: "ranked-results", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
