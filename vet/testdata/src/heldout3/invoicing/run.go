// Package invoicing issues invoices for shipped orders.
package invoicing

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Run consumes shipments and relays the outbox until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, broker, outbox.Config{})
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "fulfilment.order-shipped", "invoicing")
	if err != nil {
		return err
	}
	i := &issuer{terms: 30 * 24 * time.Hour, now: time.Now}
	c, err := consumer.New(src, postgres.HandlerFunc(i.onOrderShipped), consumer.Config{Name: "invoicing"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return relay.Run(gctx) })
	g.Go(func() error { return c.Run(gctx) })
	return g.Wait()
}
