package seismo

import (
	"context"
	"runtime"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes waveforms from Kafka.
func Run(ctx context.Context, pool *pgxpool.Pool) error {
	n := &Network{workers: runtime.GOMAXPROCS(0)}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "kafka://seismo-kafka:9092")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "stations.waveforms", "magnitudes")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(n.Measure), consumer.Config{Name: "magnitudes"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
