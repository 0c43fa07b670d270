// Package harvest consumes harvest logistics events for several topics.
package harvest

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type route struct {
	topic   string
	name    string
	handler consumer.Handler
	mws     []consumer.Middleware
}

func routes(st *postgres.Store, h *Handlers) []route {
	return []route{
		{topic: "harvest.weighed", name: "harvest-weighed", handler: postgres.HandlerFunc(h.onWeighed), mws: []consumer.Middleware{middleware.Idempotency(st)}},
		{topic: "harvest.dispatched", name: "harvest-dispatched", handler: postgres.HandlerFunc(h.onDispatched), mws: []consumer.Middleware{middleware.Idempotency(st)}},
		{topic: "harvest.graded", name: "harvest-graded", handler: postgres.HandlerFunc(h.onGraded), mws: []consumer.Middleware{middleware.Logging()}}, // want "graded route has no idempotency middleware"
	}
}

// Run starts one consumer per route and waits for them.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &Handlers{}
	errs := make(chan error)
	rs := routes(st, h)
	for _, r := range rs {
		src, err := broker.Source(ctx, r.topic, r.name)
		if err != nil {
			return err
		}
		c, err := consumer.New(src, r.handler, consumer.Config{Name: r.name}, r.mws...)
		if err != nil {
			return err
		}
		go func() { errs <- c.Run(ctx) }()
	}
	var all error
	for range rs {
		all = errors.Join(all, <-errs)
	}
	return all
}
