package vault

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes box events from SQS.
func Run(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	proj := newProjector(log)
	go proj.Run(ctx)
	al := &AccessLog{proj: proj}

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "sqs://eu-central-1")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "vault-box-events", "vault-access-log")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(al.Record), consumer.Config{Name: "vault-access-log"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
