// Package quotes turns accepted quotes into order requests.
package quotes

import (
	"context"

	"heldout3/quotes/internal/typed"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/segmentio/kafka-go"
)

// Run consumes accepted quotes until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, orders *kafka.Writer) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "sales.quote-accepted", "quotes")
	if err != nil {
		return err
	}
	s := &service{orders: orders}
	c, err := consumer.New(src, typed.Handler(s.onQuoteAccepted), consumer.Config{Name: "quotes"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
