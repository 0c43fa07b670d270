// Package orders confirms checkout requests from SQS: it stores the order
// priced in euros and announces it through the outbox.
package orders

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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
	SQS    string
	Pool   *pgxpool.Pool
	FXURL  string // the treasury's rate service
	Outbox string // destination of order.confirmed, default "orders-confirmed"
}

// Run consumes checkouts until ctx ends; the relay publishes what the handler
// queued.
func Run(ctx context.Context, cfg Config) error {
	dest := cfg.Outbox
	if dest == "" {
		dest = "orders-confirmed"
	}
	client := &http.Client{Timeout: 3 * time.Second}

	rate := func(ctx context.Context, currency string) (float64, error) {
		if currency == "EUR" {
			return 1, nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.FXURL+"/rates/"+currency+"/EUR", nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var r struct {
			Rate string `json:"rate"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return 0, err
		}
		return strconv.ParseFloat(r.Rate, 64)
	}

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.SQS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "checkouts", "orders")
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(cfg.Pool, b, outbox.Config{})
	if err != nil {
		return err
	}
	go func() { _ = relay.Run(ctx) }()

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		publish := func(v any) error {
			body, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return outbox.Send(ctx, tx, dest, &consumer.Message{Key: msg.Key, Body: body, Headers: map[string]string{"type": "order.confirmed"}})
		}

		var co struct {
			Order    string `json:"order"`
			Currency string `json:"currency"`
			Amount   int64  `json:"amount"`
		}
		if err := json.Unmarshal(msg.Body, &co); err != nil {
			return consumer.Permanent(err)
		}
		fx, err := rate(ctx, co.Currency)
		if err != nil {
			return fmt.Errorf("fx %s: %w", co.Currency, err)
		}
		eur := int64(float64(co.Amount) * fx)
		if _, err := tx.Exec(ctx, `INSERT INTO orders (id, currency, amount, amount_eur) VALUES ($1, $2, $3, $4)`, co.Order, co.Currency, co.Amount, eur); err != nil {
			return err
		}
		return publish(map[string]any{"order": co.Order, "amount_eur": eur})
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "orders"}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
