// Package tenant carries the tenant of a message through the context.
package tenant

import (
	"context"

	"github.com/oncely/oncely/consumer"
)

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the tenant in ctx, or "default".
func From(ctx context.Context) string {
	if id, ok := ctx.Value(key{}).(string); ok && id != "" {
		return id
	}
	return "default"
}

// FromHeader is middleware that copies the tenant header into the context.
func FromHeader() consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			return next.Handle(With(ctx, msg.Headers["tenant"]), msg)
		})
	}
}
