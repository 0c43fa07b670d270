package app

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Run consumes billing's sources until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, url string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	broker, err := adapters.Open(ctx, url)
	if err != nil {
		return err
	}
	svc := NewService(pool)
	routes := []struct {
		source, name string
		h            consumer.Handler
	}{
		{"orders.closed", "billing-invoices", postgres.HandlerFunc(svc.onOrderClosed)},
		{"payments.refunded", "billing-credits", postgres.HandlerFunc(svc.onRefund)},
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, r := range routes {
		src, err := broker.Source(ctx, r.source, r.name)
		if err != nil {
			return err
		}
		c, err := consumer.New(src, r.h, consumer.Config{Name: r.name}, middleware.Logging(), middleware.Idempotency(st))
		if err != nil {
			return err
		}
		g.Go(func() error { return c.Run(gctx) })
	}
	return g.Wait()
}
