// Package payouts pays sellers out from settlement events on Kafka through
// the payment provider's API, which deduplicates by Idempotency-Key.
package payouts

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
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	Kafka       string
	Pool        *pgxpool.Pool
	ProviderURL string
	APIKey      string
}

// Run consumes settlements until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	api := &http.Client{Timeout: 10 * time.Second}
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "settlements", "payouts")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var s struct {
			Seller string `json:"seller"`
			Cents  int64  `json:"cents"`
			IBAN   string `json:"iban"`
		}
		if err := json.Unmarshal(msg.Body, &s); err != nil {
			return consumer.Permanent(err)
		}
		body, _ := json.Marshal(map[string]any{"amount": s.Cents, "currency": "EUR", "iban": s.IBAN, "reference": msg.ID})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.ProviderURL+"/v1/payouts", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
		req.Header.Set("Idempotency-Key", "payout-"+msg.ID)
		//oncely:allow txescape the provider deduplicates on Idempotency-Key (the message ID) for 30 days; reviewed by payments, PAY-412
		resp, err := api.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 500 {
			return fmt.Errorf("payout provider: %s", resp.Status)
		}
		if resp.StatusCode >= 400 {
			return consumer.Permanent(fmt.Errorf("payout refused: %s", resp.Status))
		}
		_, err = tx.Exec(ctx, `INSERT INTO payouts (seller_id, cents, message_id, paid_at) VALUES ($1, $2, $3, now())`, s.Seller, s.Cents, msg.ID)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "payouts", Concurrency: 2}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
