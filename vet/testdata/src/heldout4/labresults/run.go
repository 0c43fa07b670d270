package labresults

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run files lab results until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, spool string) error {
	src, err := broker.Source(ctx, "lims.result-verified", "result-filer")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	f := &Filer{SpoolDir: spool, Facility: "NORTHLAB"}
	c, err := consumer.New(src, postgres.HandlerFunc(f.file), consumer.Config{Name: "result-filer"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
