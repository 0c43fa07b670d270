// Package webhooks reacts to order events from Kafka: it updates the order
// read model and tells partner shops about paid orders.
package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	Brokers    string // kafka://...
	Pool       *pgxpool.Pool
	PartnerURL string
}

// Run consumes order events until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	client := &http.Client{Timeout: 5 * time.Second}
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.Brokers)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "orders", "order-webhooks")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var o struct {
			ID      string `json:"id"`
			Partner string `json:"partner"`
			Total   int64  `json:"total"`
		}
		if err := json.Unmarshal(msg.Body, &o); err != nil {
			return consumer.Permanent(err)
		}
		switch typ := msg.Headers["ce_type"]; typ {
		case "order.created":
			_, err := tx.Exec(ctx, `INSERT INTO order_view (id, partner, total, status) VALUES ($1, $2, $3, 'created')`, o.ID, o.Partner, o.Total)
			return err
		case "order.cancelled":
			if _, err := tx.Exec(ctx, `UPDATE order_view SET status = 'cancelled' WHERE id = $1`, o.ID); err != nil {
				return err
			}
			return outbox.Send(ctx, tx, "partner-notifications", &consumer.Message{Key: o.Partner, Body: msg.Body})
		case "order.paid":
			if _, err := tx.Exec(ctx, `UPDATE order_view SET status = 'paid' WHERE id = $1`, o.ID); err != nil {
				return err
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.PartnerURL+"/hooks/"+o.Partner, bytes.NewReader(msg.Body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req) // want "."
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode >= 300 {
				return fmt.Errorf("partner hook: %s", resp.Status)
			}
			return nil
		default:
			return nil
		}
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "order-webhooks"}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
