// Package pipeline is the platform team's shared consumer plumbing: every
// service builds its consumers through it so logging and deduplication are
// configured the same way everywhere.
package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/postgres"
)

// Standard is the middleware stack of every platform consumer, outermost
// first: structured logging, then deduplication through st.
func Standard(st store.Store) []consumer.Middleware {
	return []consumer.Middleware{
		middleware.Logging(),
		middleware.Idempotency(st),
	}
}

// Typed adapts a handler of decoded events of type T. The body is decoded as
// JSON; a body that does not decode is a permanent failure. fn runs inside the
// claim's transaction.
func Typed[T any](fn func(ctx context.Context, tx pgx.Tx, event T) error) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var event T
		if err := json.Unmarshal(msg.Body, &event); err != nil {
			return consumer.Permanent(fmt.Errorf("decode %T: %w", event, err))
		}
		return fn(ctx, tx, event)
	})
}

// Spec describes one consumer of a service.
type Spec struct {
	Source      string
	Name        string
	Concurrency int
	Handler     consumer.Handler
}

// Run opens spec's source on broker and runs the consumer until ctx ends.
func Run(ctx context.Context, broker adapters.Broker, st store.Store, spec Spec) error {
	src, err := broker.Source(ctx, spec.Source, spec.Name)
	if err != nil {
		return fmt.Errorf("open %s: %w", spec.Source, err)
	}
	c, err := consumer.New(src, spec.Handler, consumer.Config{
		Name:        spec.Name,
		Concurrency: spec.Concurrency,
	}, Standard(st)...)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", spec.Name, err)
	}
	return c.Run(ctx)
}
