// Package deps carries request-scoped dependencies in the context.
package deps

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type poolKey struct{}

// With returns ctx carrying pool.
func With(ctx context.Context, pool *pgxpool.Pool) context.Context {
	return context.WithValue(ctx, poolKey{}, pool)
}

// DB returns the pool ctx carries.
func DB(ctx context.Context) *pgxpool.Pool {
	p, _ := ctx.Value(poolKey{}).(*pgxpool.Pool)
	return p
}

// Inject puts pool into every message's context.
func Inject(pool *pgxpool.Pool) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			return next.Handle(With(ctx, pool), m)
		})
	}
}
