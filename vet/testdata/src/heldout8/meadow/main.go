package meadow

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes hive readings from Redis Streams.
func Run(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "redis://apiary-redis:6379/0")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "hives.weights", "honey-flow")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, consumer.HandlerFunc(flow), settings("honey-flow"), stack(log, st)...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
