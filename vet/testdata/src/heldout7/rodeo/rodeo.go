// Package rodeo scores rides from the judges' tablets and keeps the
// standings of each event.
package rodeo

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"example.com/platform"
	"heldout7/platform/kit"
)

// Config configures the scoring consumer.
type Config struct {
	// Topic carries judges' scores; default "rodeo.scores".
	Topic string
	// Debug adds the package's message dump middleware.
	Debug bool
}

// dump logs each message's body; only for debugging.
func dump(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			log.Debug("score", "id", msg.ID, "body", string(msg.Body))
			return next.Handle(ctx, msg)
		})
	}
}

// Run consumes scores until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.Topic == "" {
		cfg.Topic = "rodeo.scores"
	}
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("rodeo: %w", err)
	}
	src, err := broker.Source(ctx, cfg.Topic, "rodeo-scoring")
	if err != nil {
		return fmt.Errorf("rodeo: %w", err)
	}
	chain := []consumer.Middleware{middleware.Logging()}
	if cfg.Debug {
		chain = append(chain, dump(log))
	}
	chain = append(chain, platform.Dedupe(st))
	c, err := consumer.New(src, postgres.HandlerFunc(kit.Typed(score)), consumer.Config{Name: "rodeo-scoring"}, chain...)
	if err != nil {
		return fmt.Errorf("rodeo: %w", err)
	}
	return c.Run(ctx)
}
