// Package obs is the platform team's observability middleware: small
// factories every service puts in front of its chain. None of them
// deduplicates; services add middleware.Idempotency themselves.
package obs

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Timing logs how long each handler call took.
func Timing(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, msg)
			log.DebugContext(ctx, "handled", "id", msg.ID, "took", time.Since(start), "err", err)
			return err
		})
	}
}

// Tagged puts the message's source into the logger carried by ctx.
func Tagged(service string) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			return next.Handle(context.WithValue(ctx, serviceKey{}, service), msg)
		})
	}
}

type serviceKey struct{}

// Service returns the name Tagged put into ctx.
func Service(ctx context.Context) string {
	s, _ := ctx.Value(serviceKey{}).(string)
	return s
}
