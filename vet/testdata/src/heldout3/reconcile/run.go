// Package reconcile loads bank statements for reconciliation.
package reconcile

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes statements until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "bank.statements", "reconcile")
	if err != nil {
		return err
	}
	r := &reconciler{parallelism: 4}
	c, err := consumer.New(src, postgres.HandlerFunc(r.onStatement), consumer.Config{Name: "reconcile", Concurrency: 2},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
