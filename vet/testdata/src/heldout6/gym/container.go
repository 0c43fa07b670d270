// Package gym tracks membership check-ins and visit counts.
package gym

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Deps is the service's dependency container.
type Deps struct {
	Pool        *pgxpool.Pool
	Log         *slog.Logger
	Middlewares []consumer.Middleware
}

// NewDeps builds the container with the platform's standard chain.
func NewDeps(pool *pgxpool.Pool, log *slog.Logger) *Deps {
	return &Deps{
		Pool:        pool,
		Log:         log,
		Middlewares: []consumer.Middleware{middleware.Logging(), timing(log)},
	}
}

func timing(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			err := next.Handle(ctx, msg)
			log.Debug("handled", "id", msg.ID, "err", err)
			return err
		})
	}
}
