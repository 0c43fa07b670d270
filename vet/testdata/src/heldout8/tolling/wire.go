package tolling

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/shared/obs"
	"heldout8/tolling/eventstore"
)

// Serve runs the toll consumer on Kafka.
func Serve(ctx context.Context, pool *pgxpool.Pool) error {
	h := NewHandlers(eventstore.New(pool))
	claims, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "kafka://kafka-1:9092,kafka-2:9092")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "tolling.events", "toll-accounts")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(h.Route), consumer.Config{Name: "toll-accounts"},
		obs.Tagged("tolling"), middleware.Idempotency(claims))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
