// Package bazaar settles stallholders' card takings into their weekly
// statements.
package bazaar

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// recoverer turns a handler panic into an error the runtime retries.
func recoverer(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) (err error) {
			defer func() {
				if r := recover(); r != nil {
					log.Error("panic", "message", msg.ID, "panic", r)
					err = fmt.Errorf("bazaar: panic: %v", r)
				}
			}()
			return next.Handle(ctx, msg)
		})
	}
}

// Service wires the takings consumer.
type Service struct {
	Pool   *pgxpool.Pool
	Broker adapters.Broker
	Log    *slog.Logger
}

// Run consumes card takings until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	src, err := s.Broker.Source(ctx, "payments.card-takings", "bazaar-statements")
	if err != nil {
		return fmt.Errorf("bazaar: %w", err)
	}
	t := &takings{pool: s.Pool}
	h := consumer.Chain(consumer.HandlerFunc(t.record), middleware.Logging(), recoverer(s.Log))
	c, err := consumer.New(src, h, consumer.Config{Name: "bazaar-statements", Concurrency: 2}) // want "idempotency"
	if err != nil {
		return fmt.Errorf("bazaar: %w", err)
	}
	return c.Run(ctx)
}
