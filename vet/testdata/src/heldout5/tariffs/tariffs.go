// Package tariffs applies energy tariff changes and notifies live dashboards.
package tariffs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type change struct {
	Region     string  `json:"region"`
	PencePerKw float64 `json:"pence_per_kwh"`
}

// Handler applies tariff changes.
type Handler struct {
	rdb *redis.Client
}

// Handle applies one tariff change.
func (h *Handler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("tariffs: no claim transaction")
	}
	var c change
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tariffs (region, pence_per_kwh) VALUES ($1, $2)`, c.Region, c.PencePerKw); err != nil {
		return err
	}
	if cur, err := h.rdb.Get(ctx, "tariff:"+c.Region).Result(); err == nil && cur == fmt.Sprint(c.PencePerKw) {
		return nil
	}
	return h.rdb.Publish(ctx, "tariff-changes", msg.Body).Err() // want "dashboard notification published to Redis inside the handler"
}

// Run consumes tariff changes.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, addr string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &Handler{rdb: redis.NewClient(&redis.Options{Addr: addr})}
	c, err := consumer.New(src, h, consumer.Config{Name: "tariffs"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
