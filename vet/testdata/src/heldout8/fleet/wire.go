package fleet

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/fleet/adapters/logrepo"
	"heldout8/fleet/adapters/pgrepo"
)

// Run consumes odometer readings from brokerURL until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, brokerURL string, log *slog.Logger) error {
	vehicles := logrepo.Wrap(pgrepo.New(pool), log)
	svc := NewService(vehicles, log)

	claims, err := postgres.New(pool)
	if err != nil {
		return err
	}
	broker, err := adapters.Open(ctx, brokerURL)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "telematics.odometer", "fleet")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(svc.HandleReading),
		consumer.Config{Name: "fleet", Concurrency: 4},
		middleware.Logging(), middleware.Idempotency(claims))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
