package library

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

const schema = `CREATE TABLE IF NOT EXISTS holds (copy text, patron text, placed_at timestamptz DEFAULT now())`

// Run migrates, starts the hold janitor and the loan consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool, log *slog.Logger) error {
	if _, err := pool.Exec(ctx, schema); err != nil {
		return err
	}
	go expireHolds(ctx, pool, log)
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, loans{}, consumer.Config{Name: "library-loans"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

func expireHolds(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := pool.Exec(ctx, `DELETE FROM holds WHERE placed_at < now() - interval '7 days'`); err != nil {
				log.Warn("expire holds", "err", err)
			}
		}
	}
}
