package ledger

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// dedupeTimed is the ledger team's wrapper around the idempotency middleware:
// it times the claim plus the handler and logs slow postings.
func dedupeTimed(st store.Store, log *slog.Logger, slow time.Duration) consumer.Middleware {
	idem := middleware.Idempotency(st)
	return func(next consumer.Handler) consumer.Handler {
		inner := idem(next)
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			start := time.Now()
			err := inner.Handle(ctx, msg)
			if d := time.Since(start); d > slow {
				log.Warn("slow ledger posting", "message", msg.ID, "took", d)
			}
			return err
		})
	}
}
