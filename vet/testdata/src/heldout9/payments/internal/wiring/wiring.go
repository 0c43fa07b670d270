// Package wiring builds the payment consumers with the platform's chain.
package wiring

import (
	"context"

	"example.com/platform"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/payments/internal/capture"
)

func chain(st store.Store) []consumer.Middleware {
	return []consumer.Middleware{middleware.Logging(), platform.Dedupe(st)}
}

// Build returns the service's consumers.
func Build(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) ([]*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	var h capture.Captured
	g := &capture.Gauge{}
	var out []*consumer.Consumer

	src, err := broker.Source(ctx, "payments.captured", "payments-capture")
	if err != nil {
		return nil, err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(h.Handle), consumer.Config{Name: "payments-capture"}, chain(st)...)
	if err != nil {
		return nil, err
	}
	out = append(out, c)

	src, err = broker.Source(ctx, "payments.refunded", "payments-refund")
	if err != nil {
		return nil, err
	}
	c, err = consumer.New(src, platform.Wrap(postgres.HandlerFunc(h.Refunded), st), consumer.Config{Name: "payments-refund"})
	if err != nil {
		return nil, err
	}
	out = append(out, c)

	src, err = broker.Source(ctx, "payments.captured", "payments-gauge")
	if err != nil {
		return nil, err
	}
	c, err = consumer.New(src, consumer.HandlerFunc(g.Observe), consumer.Config{
		Name:       "payments-gauge",
		Duplicates: consumer.AllowDuplicates("an in-memory gauge for a dashboard; a redelivery only nudges it"),
	}, middleware.Logging())
	if err != nil {
		return nil, err
	}
	return append(out, c), nil
}
