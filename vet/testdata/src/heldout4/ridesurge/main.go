package ridesurge

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Run counts demand until ctx ends.
func Run(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, brokerURL string) error {
	broker, err := adapters.Open(ctx, brokerURL)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "rides.requested", "surge-demand")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &DemandCounter{pool: pool}, consumer.Config{Name: "surge-demand", Concurrency: 32}, middleware.Logging(), timing(log, 250*time.Millisecond)) // want "consumer without idempotency and without an AllowDuplicates opt-out"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
