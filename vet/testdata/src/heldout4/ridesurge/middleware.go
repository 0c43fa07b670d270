package ridesurge

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
)

// timing logs slow messages.
func timing(log *slog.Logger, slow time.Duration) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, msg)
			if d := time.Since(start); d > slow {
				log.Warn("slow demand message", "id", msg.ID, "took", d)
			}
			return err
		})
	}
}
