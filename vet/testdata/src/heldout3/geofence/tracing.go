package geofence

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
)

// timing logs handlers slower than threshold.
func timing(log *slog.Logger, threshold time.Duration) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, msg)
			if d := time.Since(start); d > threshold {
				log.WarnContext(ctx, "slow geofence handler", "message", msg.ID, "took", d)
			}
			return err
		})
	}
}
