// Package gapbugforward is a corpus handler package with a bug (see
// vet/corpus_test.go): the chain is listed through a helper that hands
// back the middleware it is given, built by factories of the package; none
// of them deduplicates and the Config has no Duplicates.
package gapbugforward

import (
	"context"
	"fmt"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// recovering turns a handler panic into an error.
func recovering() consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic handling %s: %v", m.ID, p)
				}
			}()
			return next.Handle(ctx, m)
		})
	}
}

// outermostFirst lists middleware outermost first.
func outermostFirst(mws ...consumer.Middleware) []consumer.Middleware { return mws }

type printer struct{}

func (printer) Handle(ctx context.Context, m *consumer.Message) error { return nil }

// Start prints kitchen tickets.
func Start(ctx context.Context, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "kiosk.orders", "tickets")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, printer{}, consumer.Config{Name: "tickets"}, outermostFirst(recovering(), middleware.Logging())...) // want `consumer.New without an idempotency middleware`
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
