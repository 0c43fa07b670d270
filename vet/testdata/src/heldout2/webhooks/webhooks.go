// Package webhooks notifies subscribers when an invoice is paid.
package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type notifier struct {
	subscribers map[string]string // tenant -> URL
}

// request builds the webhook the relay will send; nothing is sent here.
func (n *notifier) request(ctx context.Context, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

func (n *notifier) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	url, ok := n.subscribers[msg.Headers["tenant"]]
	if !ok {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE invoices SET notified = true WHERE id = $1`, msg.Key); err != nil {
		return fmt.Errorf("mark notified: %w", err)
	}
	body, _ := json.Marshal(map[string]string{"invoice": msg.Key, "event": "paid"})
	req, err := n.request(ctx, url, body)
	if err != nil {
		return consumer.Permanent(err)
	}
	return outbox.Send(ctx, tx, "webhooks.out", &consumer.Message{
		Key:     msg.Key,
		Body:    body,
		Headers: map[string]string{"url": req.URL.String(), "content-type": req.Header.Get("Content-Type")},
	})
}

// Run wires the paid-invoice notifier.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, subs map[string]string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "invoices.paid", "webhook-notifier")
	if err != nil {
		return err
	}
	n := &notifier{subscribers: subs}
	c, err := consumer.New(src, postgres.HandlerFunc(n.handle), consumer.Config{Name: "webhook-notifier"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
