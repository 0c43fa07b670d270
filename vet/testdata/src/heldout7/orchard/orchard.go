// Package orchard keeps the farm shop's price list and tells the shop's
// tills when a price changes.
package orchard

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Config configures the price consumer.
type Config struct {
	// Topic carries price changes; default "orchard.prices".
	Topic string
	// InvalidateChannel is the Redis channel the tills listen on;
	// default "tills.invalidate".
	InvalidateChannel string
}

func (c *Config) defaults() {
	if c.Topic == "" {
		c.Topic = "orchard.prices"
	}
	if c.InvalidateChannel == "" {
		c.InvalidateChannel = "tills.invalidate"
	}
}

type priceBook struct {
	rdb     *redis.Client
	channel string
	log     *slog.Logger
}

// Run consumes price changes until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	cfg.defaults()
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("orchard: %w", err)
	}
	src, err := broker.Source(ctx, cfg.Topic, "orchard-prices")
	if err != nil {
		return fmt.Errorf("orchard: %w", err)
	}
	pb := &priceBook{rdb: rdb, channel: cfg.InvalidateChannel, log: log}
	c, err := consumer.New(src, postgres.HandlerFunc(pb.apply), consumer.Config{Name: "orchard-prices"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("orchard: %w", err)
	}
	return c.Run(ctx)
}
