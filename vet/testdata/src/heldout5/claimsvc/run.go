package claimsvc

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout5/claimsvc/repo"
)

// Run consumes claim approvals until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "claims.approved", "claimsvc")
	if err != nil {
		return err
	}
	a := &Approver{Audit: repo.NewAudit(pool)}
	c, err := consumer.New(src, postgres.HandlerFunc(a.handle), consumer.Config{Name: "claimsvc"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
