package telemetry

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/shared/obs"
)

// Run consumes device positions from Kafka.
func Run(ctx context.Context, pool *pgxpool.Pool, geo Geocoder, log *slog.Logger) error {
	enr := newEnricher(geo, 4, log)
	defer enr.stop()
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "kafka://telemetry-kafka:9092")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "devices.positions", "position-ingestor")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &Ingestor{enrich: enr}, consumer.Config{Name: "position-ingestor", Concurrency: 16},
		obs.Timing(log), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
