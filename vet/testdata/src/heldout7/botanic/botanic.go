// Package botanic books greenhouse watering runs and keeps the plant
// catalogue's care sheets warm in Redis.
package botanic

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"

	"example.com/platform"
)

// CareSheet is how much water a species needs.
type CareSheet struct {
	Species   string  `json:"species"`
	MlPerPot  float64 `json:"ml_per_pot"`
	MaxPerDay int     `json:"max_per_day"`
}

// warmCache loads every care sheet into Redis before the consumer starts,
// so the handler reads sheets without a database round trip.
func warmCache(ctx context.Context, rdb *redis.Client, sheets []CareSheet) error {
	for _, s := range sheets {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if err := rdb.Set(ctx, "care:"+s.Species, b, 24*time.Hour).Err(); err != nil {
			return fmt.Errorf("warm %s: %w", s.Species, err)
		}
	}
	return nil
}

// Run warms the cache and consumes watering runs until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, broker adapters.Broker, sheets []CareSheet, log *slog.Logger) error {
	if err := warmCache(ctx, rdb, sheets); err != nil {
		return fmt.Errorf("botanic: %w", err)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "greenhouse.watering", "botanic-watering")
	if err != nil {
		return err
	}
	w := &waterer{rdb: rdb, log: log}
	c, err := consumer.New(src, postgres.HandlerFunc(w.watered), consumer.Config{Name: "botanic-watering"},
		platform.Dedupe(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
