// Package gapokforward is a corpus handler package (see
// vet/corpus_test.go): the twin of gapbugforward. The chain is listed
// through a helper that hands back the middleware it is given, one of them
// a factory of the package around middleware.Idempotency; a second
// consumer lists the middleware its caller gives it.
package gapokforward

import (
	"context"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// claims is the package's idempotency middleware.
func claims(st store.Store) consumer.Middleware { return middleware.Idempotency(st) }

// outermostFirst lists middleware outermost first.
func outermostFirst(mws ...consumer.Middleware) []consumer.Middleware { return mws }

type printer struct{}

func (printer) Handle(ctx context.Context, m *consumer.Message) error { return nil }

// Start prints kitchen tickets and bar tickets; extra is the platform's
// chain for the bar.
func Start(ctx context.Context, broker adapters.Broker, st store.Store, extra []consumer.Middleware) error {
	src, err := broker.Source(ctx, "kiosk.orders", "tickets")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, printer{}, consumer.Config{Name: "tickets"}, outermostFirst(middleware.Logging(), claims(st))...)
	if err != nil {
		return err
	}
	bar, err := consumer.New(src, printer{}, consumer.Config{Name: "bar"}, outermostFirst(extra...)...)
	if err != nil {
		return err
	}
	go bar.Run(ctx)
	return c.Run(ctx)
}
