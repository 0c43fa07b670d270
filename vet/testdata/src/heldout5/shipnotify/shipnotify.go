// Package shipnotify marks orders shipped and notifies customers via the outbox.
package shipnotify

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type shipped struct {
	OrderID  string `json:"order_id"`
	Email    string `json:"email"`
	Tracking string `json:"tracking"`
}

// Notifier handles shipments.
type Notifier struct{}

func (Notifier) onShipped(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s shipped
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'shipped', tracking = $2 WHERE id = $1`, s.OrderID, s.Tracking); err != nil {
		return err
	}
	mail, _ := json.Marshal(map[string]string{"to": s.Email, "template": "shipped", "tracking": s.Tracking})
	sms, _ := json.Marshal(map[string]string{"order": s.OrderID, "template": "shipped-sms"})
	return outbox.SendBatch(ctx, tx, []outbox.Outgoing{
		{Destination: "email.send", Message: &consumer.Message{Key: s.OrderID, Body: mail}},
		{Destination: "sms.send", Message: &consumer.Message{Key: s.OrderID, Body: sms}},
	})
}

// Run consumes shipments and relays the outbox to the broker.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, broker, outbox.Config{})
	if err != nil {
		return err
	}
	go relay.Run(ctx)
	src, err := broker.Source(ctx, "orders.shipped", "shipnotify")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(Notifier{}.onShipped), consumer.Config{Name: "shipnotify"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
