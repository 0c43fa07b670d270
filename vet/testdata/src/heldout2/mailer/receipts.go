// Package mailer sends receipts for completed orders through the outbox.
package mailer

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type receipt struct {
	To      string `json:"to"`
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
}

func queueReceipt(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r receipt
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE orders SET receipt_queued = true WHERE id = $1`, r.OrderID); err != nil {
		return fmt.Errorf("mark: %w", err)
	}
	body, _ := json.Marshal(r)
	return outbox.Send(ctx, tx, "mail.receipts", &consumer.Message{Key: r.OrderID, Body: body})
}

// Run wires the receipt consumer, and the mail sender that reads the
// outbox destination "mail.receipts" from the broker.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, relay string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "orders.completed", "receipts")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(queueReceipt), consumer.Config{Name: "receipts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	go func() {
		_ = NewSender(relay).Drain(ctx, broker)
	}()
	return c.Run(ctx)
}
