// Package gapokhelperchain is a correct corpus handler package (see
// vet/corpus_test.go): the consumer's Config and middleware come from
// helpers of the package; the chain helper appends middleware.Idempotency
// to a local slice, and a second consumer's chain helper takes the rest
// of its chain from its caller, which vet cannot see into.
package gapokhelperchain

import (
	"context"
	"log/slog"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

func settings(name string, workers int) consumer.Config {
	cfg := consumer.Config{Name: name}
	if workers > 0 {
		cfg.Concurrency = workers
	}
	return cfg
}

func chainFor(st store.Store) []consumer.Middleware {
	mws := []consumer.Middleware{middleware.Logging()}
	mws = append(mws, middleware.Idempotency(st))
	return mws
}

func withExtras(extra ...consumer.Middleware) []consumer.Middleware {
	return append([]consumer.Middleware{middleware.Logging()}, extra...)
}

type counter struct{}

func (counter) Handle(ctx context.Context, m *consumer.Message) error { return nil }

// Start consumes page views and clicks; extra is the platform's chain.
func Start(ctx context.Context, log *slog.Logger, broker adapters.Broker, st store.Store, extra []consumer.Middleware) error {
	src, err := broker.Source(ctx, "web", "views")
	if err != nil {
		return err
	}
	views, err := consumer.New(src, counter{}, settings("views", 2), chainFor(st)...)
	if err != nil {
		return err
	}
	clicks, err := consumer.New(src, counter{}, settings("clicks", 1), withExtras(extra...)...)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "consuming")
	go clicks.Run(ctx)
	return views.Run(ctx)
}
