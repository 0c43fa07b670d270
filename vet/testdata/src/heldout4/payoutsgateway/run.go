package payoutsgateway

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes payout approvals until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "treasury.payout-approved", "payout-release")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	r := &releaser{psp: newPSP(os.Getenv("PSP_BASE_URL"), os.Getenv("PSP_API_KEY"))}
	c, err := consumer.New(src, postgres.HandlerFunc(r.release), consumer.Config{Name: "payout-release"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
