// Package catalog keeps the product catalog and announces price changes.
package catalog

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type priceChange struct {
	SKU   string `json:"sku"`
	Cents int64  `json:"cents"`
}

type txHandler func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error

func priceUpdater(js nats.JetStreamContext, subject string) txHandler {
	return func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var pc priceChange
		if err := json.Unmarshal(msg.Body, &pc); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE products SET price_cents = $2 WHERE sku = $1`, pc.SKU, pc.Cents); err != nil {
			return fmt.Errorf("update price: %w", err)
		}
		if _, err := js.Publish(subject+"."+pc.SKU, msg.Body); err != nil { // want "outbox"
			return fmt.Errorf("announce: %w", err)
		}
		return nil
	}
}

// Run wires the catalog consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, nc *nats.Conn, broker adapters.Broker) error {
	js, err := nc.JetStream()
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "catalog.prices", "catalog")
	if err != nil {
		return err
	}
	h := postgres.HandlerFunc(priceUpdater(js, "catalog.price"))
	c, err := consumer.New(src, h, consumer.Config{Name: "catalog"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
