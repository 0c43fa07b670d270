package claimsadjust

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run applies decisions until ctx ends.
func Run(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "claims.decision-made", "claims-adjust")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	a := &Adjuster{log: log, reviewOver: 2_500_000}
	c, err := consumer.New(src, a, consumer.Config{Name: "claims-adjust", Concurrency: 4}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
