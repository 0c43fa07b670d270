package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes account changes and flushes the trail every second.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	t := &Trail{log: log}
	go t.flushLoop(ctx, time.Second)
	src, err := broker.Source(ctx, "accounts.changed", "audit")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(t.onAccountChanged), consumer.Config{Name: "audit"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
