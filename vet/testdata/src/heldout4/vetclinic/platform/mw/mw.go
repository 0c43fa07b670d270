// Package mw is the clinic group's standard consumer chain.
package mw

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// Standard returns the chain every clinic consumer uses, outermost first:
// logging, a per-message deadline, idempotency through st.
func Standard(log *slog.Logger, st store.Store, deadline time.Duration) []consumer.Middleware {
	return []consumer.Middleware{
		middleware.Logging(),
		withDeadline(deadline),
		middleware.Idempotency(st),
	}
}

func withDeadline(d time.Duration) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next.Handle(ctx, msg)
		})
	}
}
