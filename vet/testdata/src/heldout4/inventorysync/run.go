package inventorysync

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/segmentio/kafka-go"
)

// Run consumes stock movements until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, w *kafka.Writer) error {
	src, err := broker.Source(ctx, "wms.stock-moved", "inventory-sync")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	s := &Syncer{availability: w}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(s.apply), consumer.Config{Name: "inventory-sync"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
