package warehousepick

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

func baseConfig(name string) consumer.Config {
	return consumer.Config{Name: name, Concurrency: 8}
}

func standardChain(log *slog.Logger) []consumer.Middleware {
	return []consumer.Middleware{
		middleware.Logging(),
		recoverPanics(log),
	}
}

func recoverPanics(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) (err error) {
			defer func() {
				if p := recover(); p != nil {
					log.Error("handler panicked", "id", msg.ID, "panic", p)
					err = consumer.Permanent(context.Canceled)
				}
			}()
			return next.Handle(ctx, msg)
		})
	}
}

// Run creates pick tasks until ctx ends.
func Run(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "oms.orders", "warehouse-pick")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, newRouter(&tasks{pool: pool}), baseConfig("warehouse-pick"), standardChain(log)...) // want "pick task consumer without idempotency and without an AllowDuplicates opt-out"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
