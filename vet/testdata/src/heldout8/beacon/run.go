package beacon

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/shared/tenant"
)

// Run consumes beacon status reports from SQS.
func Run(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	m := &Monitor{log: log, slowAfter: 2 * time.Second}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "sqs://eu-north-1")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "beacon-status", "beacon-monitor")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(m.Apply), consumer.Config{Name: "beacon-monitor"},
		tenant.FromHeader(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
