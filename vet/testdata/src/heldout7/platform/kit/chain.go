package kit

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// Standard is the chain every team's consumer runs: logging, panic
// recovery and the Postgres claim, in that order.
func Standard(st store.Store, log *slog.Logger) []consumer.Middleware {
	return []consumer.Middleware{
		middleware.Logging(),
		Recoverer(log),
		middleware.Idempotency(st),
	}
}

// Recoverer turns a panic in the handler into a retryable error.
func Recoverer(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) (err error) {
			defer func() {
				if r := recover(); r != nil {
					log.Error("handler panicked", "message", msg.ID, "panic", r)
					err = fmt.Errorf("panic in handler: %v", r)
				}
			}()
			return next.Handle(ctx, msg)
		})
	}
}
