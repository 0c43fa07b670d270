// Package gapbughelperchain is a corpus handler package with a bug (see
// vet/corpus_test.go): the consumer's Config and middleware come from
// helpers of the package; the chain is assembled in a local slice with
// appends and the Config has fields set after its literal, but neither
// adds idempotency nor opts out with Duplicates.
package gapbughelperchain

import (
	"context"
	"log/slog"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

func settings(name string, workers int) consumer.Config {
	cfg := consumer.Config{Name: name}
	if workers > 0 {
		cfg.Concurrency = workers
	}
	return cfg
}

func timed(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			err := next.Handle(ctx, m)
			log.DebugContext(ctx, "handled", "id", m.ID, "err", err)
			return err
		})
	}
}

func chainFor(log *slog.Logger, verbose bool) []consumer.Middleware {
	mws := []consumer.Middleware{middleware.Logging()}
	if verbose {
		mws = append(mws, timed(log))
	}
	return mws
}

type counter struct{}

func (counter) Handle(ctx context.Context, m *consumer.Message) error { return nil }

// Start consumes page views.
func Start(ctx context.Context, log *slog.Logger, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "web", "views")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, counter{}, settings("views", 2), chainFor(log, true)...) // want `consumer.New without an idempotency middleware`
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
