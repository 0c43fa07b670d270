// Package accountsync mirrors identity accounts into the billing database.
package accountsync

import (
	"context"

	"heldout3/accountsync/db"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes account events until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "identity.accounts", "accountsync")
	if err != nil {
		return err
	}
	s := &syncer{q: db.New(pool)}
	h := consumer.Chain(postgres.HandlerFunc(s.apply), middleware.Logging(), middleware.Idempotency(st))
	c, err := consumer.New(src, h, consumer.Config{Name: "accountsync"})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
