package quarry

import (
	"context"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Main consumes blast logs from SQS.
func Main(ctx context.Context, pool *pgxpool.Pool) error {
	maxCharge, err := strconv.ParseFloat(os.Getenv("PERMIT_MAX_CHARGE_KG"), 64)
	if err != nil {
		return err
	}
	reg := newRegistry(maxCharge)
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, os.Getenv("BROKER_URL"))
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "rig-blast-logs", "blast-registry")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(reg.File), consumer.Config{Name: "blast-registry"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
