// Package tickets opens support tickets from inbound e-mail.
package tickets

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes inbound e-mail until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, opts ...Option) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "support.inbound-email", "tickets")
	if err != nil {
		return err
	}
	s := newService(pool, opts...)
	c, err := consumer.New(src, postgres.HandlerFunc(s.openTicket),
		consumer.Config{Name: "tickets", Concurrency: 2}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
