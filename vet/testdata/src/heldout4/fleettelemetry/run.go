package fleettelemetry

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run ingests telemetry until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "fleet.telemetry", "telemetry-ingest")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	in := &Ingest{pool: pool}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(in.handleBatch),
		consumer.Config{Name: "telemetry-ingest", Concurrency: 2}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
