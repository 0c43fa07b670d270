package kiosk

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/oncely/oncely/consumer"
)

// recoverer turns a handler panic into an error with the message ID.
func recoverer(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) (err error) {
			defer func() {
				if p := recover(); p != nil {
					log.ErrorContext(ctx, "panic", "id", msg.ID, "panic", p)
					err = fmt.Errorf("panic handling %s: %v", msg.ID, p)
				}
			}()
			return next.Handle(ctx, msg)
		})
	}
}

// storeScoped rejects messages of stores this deployment does not serve.
func storeScoped(stores ...string) consumer.Middleware {
	allowed := map[string]bool{}
	for _, s := range stores {
		allowed[s] = true
	}
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			if !allowed[msg.Headers["store"]] {
				return consumer.Permanent(fmt.Errorf("store %q not served here", msg.Headers["store"]))
			}
			return next.Handle(ctx, msg)
		})
	}
}

// pipeline lists middleware outermost first.
func pipeline(mws ...consumer.Middleware) []consumer.Middleware { return mws }
