// Package catalog maintains list prices and tells the storefront about
// changes.
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

// Prices applies price lists.
type Prices struct {
	js nats.JetStreamContext
}

type priceSet struct {
	SKU        string `json:"sku"`
	PriceCents int64  `json:"price_cents"`
	Currency   string `json:"currency"`
}

func (p *Prices) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev priceSet
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	var old int64
	if err := tx.QueryRow(ctx, `SELECT price_cents FROM prices WHERE sku = $1 FOR UPDATE`, ev.SKU).Scan(&old); err != nil {
		return fmt.Errorf("price %s: %w", ev.SKU, err)
	}
	if old == ev.PriceCents {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE prices SET price_cents = $2 WHERE sku = $1`, ev.SKU, ev.PriceCents); err != nil {
		return err
	}
	if _, err := p.js.Publish("storefront.price_changed", msg.Body); err != nil { // want "NATS publish inside the transactional handler"
		return fmt.Errorf("notify storefront: %w", err)
	}
	return nil
}

// Run consumes catalog.prices.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, natsURL string) error {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err
	}
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
	p := &Prices{js: js}
	c, err := consumer.New(src, postgres.HandlerFunc(p.apply), consumer.Config{Name: "catalog"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
