package geo

import (
	"context"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

func tagged(service string) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			if msg.Headers == nil {
				msg.Headers = map[string]string{}
			}
			msg.Headers["service"] = service
			return next.Handle(ctx, msg)
		})
	}
}

// standardChain is every geo consumer's middleware, claim last.
func standardChain(st store.Store) []consumer.Middleware {
	return []consumer.Middleware{
		middleware.Logging(),
		tagged("geo"),
		middleware.Idempotency(st),
	}
}
