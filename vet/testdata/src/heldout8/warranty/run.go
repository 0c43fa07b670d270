package warranty

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes filed claims from RabbitMQ.
func Run(ctx context.Context, pool *pgxpool.Pool) error {
	reg := &Registrar{pool: pool}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	broker, err := adapters.Open(ctx, "amqp://warranty:secret@rabbit:5672/desk")
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "warranty.claims", "warranty-registrar")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(reg.HandleBatch),
		consumer.Config{Name: "warranty-registrar", Concurrency: 2},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
