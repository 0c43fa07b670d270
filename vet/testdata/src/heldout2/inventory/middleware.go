package inventory

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
)

// timed logs how long each message took.
func timed(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, msg)
			log.Info("handled", "id", msg.ID, "took", time.Since(start), "err", err)
			return err
		})
	}
}

// recovering turns a panic into a retryable error.
func recovering() consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errPanic
				}
			}()
			return next.Handle(ctx, msg)
		})
	}
}
