// Package pricing recomputes quotes when costs change.
package pricing

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/segmentio/kafka-go"

	"heldout2/pricing/events"
)

type costChange struct {
	SKU    string  `json:"sku"`
	Cost   int64   `json:"cost"`
	Margin float64 `json:"margin"`
}

type repricer struct {
	events.Emitter
}

func (r repricer) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c costChange
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	price := int64(float64(c.Cost) * (1 + c.Margin))
	if _, err := tx.Exec(ctx, `UPDATE quotes SET price = $2 WHERE sku = $1`, c.SKU, price); err != nil {
		return fmt.Errorf("quote: %w", err)
	}
	out, _ := json.Marshal(map[string]any{"sku": c.SKU, "price": price})
	return r.WriteMessages(ctx, kafka.Message{Key: []byte(c.SKU), Value: out}) // want "outbox"
}

// Run wires the repricer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "costs", "repricer")
	if err != nil {
		return err
	}
	r := repricer{Emitter: events.NewEmitter("prices")}
	c, err := consumer.New(src, postgres.HandlerFunc(r.handle), consumer.Config{Name: "repricer"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
