// Package inventory reserves stock for order lines from a Redis stream. A
// short Redis lock per SKU keeps the warehouse sync job from recounting a SKU
// while a reservation is being written.
package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Config wires the service.
type Config struct {
	StreamURL string
	LockAddr  string
	Pool      *pgxpool.Pool
}

var errLocked = errors.New("sku locked by warehouse sync")

// Run consumes order lines until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	locks := redis.NewClient(&redis.Options{Addr: cfg.LockAddr})
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.StreamURL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "order-lines", "inventory")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var line struct {
			SKU string `json:"sku"`
			Qty int    `json:"qty"`
		}
		if err := json.Unmarshal(msg.Body, &line); err != nil {
			return consumer.Permanent(err)
		}
		key := "lock:sku:" + line.SKU
		ok, err := locks.SetNX(ctx, key, msg.ID, 30*time.Second).Result()
		if err != nil {
			return err
		}
		if !ok {
			return errLocked // retried with backoff
		}
		defer locks.Del(context.WithoutCancel(ctx), key)

		var onHand int
		if err := tx.QueryRow(ctx, `SELECT on_hand FROM stock WHERE sku = $1 FOR UPDATE`, line.SKU).Scan(&onHand); err != nil {
			return err
		}
		if onHand < line.Qty {
			_, err := tx.Exec(ctx, `INSERT INTO backorders (sku, qty, message_id) VALUES ($1, $2, $3)`, line.SKU, line.Qty, msg.ID)
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE stock SET on_hand = on_hand - $2, reserved = reserved + $2 WHERE sku = $1`, line.SKU, line.Qty)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "inventory", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
