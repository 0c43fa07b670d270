package signalbox

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"

	"heldout8/shared/obs"
)

// Run runs the interlocking log and the dispatchers' board on Kafka.
func Run(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "kafka://rail-kafka-1:9092,rail-kafka-2:9092")
	if err != nil {
		return err
	}

	logSrc, err := b.Source(ctx, "interlocking.aspects", "aspect-log")
	if err != nil {
		return err
	}
	logged := consumer.Chain(postgres.HandlerFunc(logAspect), middleware.Idempotency(st))
	logC, err := consumer.New(logSrc, logged, consumer.Config{Name: "aspect-log"}, obs.Timing(log))
	if err != nil {
		return err
	}

	boardSrc, err := b.Source(ctx, "interlocking.aspects", "aspect-board")
	if err != nil {
		return err
	}
	boardC, err := consumer.New(boardSrc, board{rdb: rdb}, consumer.Config{
		Name:       "aspect-board",
		Duplicates: consumer.AllowDuplicates("the board's SET by signal is naturally idempotent and timestamped"),
	}, middleware.Logging())
	if err != nil {
		return err
	}

	errs := make(chan error, 2)
	go func() { errs <- logC.Run(ctx) }()
	go func() { errs <- boardC.Run(ctx) }()
	err = <-errs
	if err2 := <-errs; err == nil {
		err = err2
	}
	return err
}
