// Package platform holds the order service's shared middleware.
package platform

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Timed logs how long each message took.
func Timed(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, m)
			log.Debug("handled", "id", m.ID, "took", time.Since(start), "err", err)
			return err
		})
	}
}
