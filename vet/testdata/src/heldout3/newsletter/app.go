// Package newsletter maintains mailing-list membership.
package newsletter

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"golang.org/x/sync/errgroup"
)

type app struct {
	broker    adapters.Broker
	consumers []*consumer.Consumer
}

// consume builds the consumer of topic under name; the service's consumers
// all share this setup.
func (a *app) consume(ctx context.Context, topic, name string, h consumer.Handler) error {
	src, err := a.broker.Source(ctx, topic, name)
	if err != nil {
		return fmt.Errorf("newsletter: source %s: %w", topic, err)
	}
	c, err := consumer.New(src, h, consumer.Config{Name: name, Concurrency: 4}, middleware.Logging()) // want "consumer without idempotency middleware and without an AllowDuplicates opt-out"
	if err != nil {
		return fmt.Errorf("newsletter: consumer %s: %w", name, err)
	}
	a.consumers = append(a.consumers, c)
	return nil
}

// Run consumes subscription changes until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	a := &app{broker: broker}
	if err := a.consume(ctx, "newsletter.subscribed", "newsletter-subscribe", &subscribeHandler{pool: pool}); err != nil {
		return err
	}
	if err := a.consume(ctx, "newsletter.unsubscribed", "newsletter-unsubscribe", &unsubscribeHandler{pool: pool}); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range a.consumers {
		g.Go(func() error { return c.Run(gctx) })
	}
	return g.Wait()
}
