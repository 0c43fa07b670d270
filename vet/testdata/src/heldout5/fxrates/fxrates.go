// Package fxrates prices travel bookings in the customer's currency.
package fxrates

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type priced struct {
	BookingID string `json:"booking_id"`
	EURCents  int64  `json:"eur_cents"`
	Currency  string `json:"currency"`
}

// Converter converts booking prices with the rates service.
type Converter struct {
	RatesURL string
	HTTP     *http.Client
}

func (c *Converter) rate(ctx context.Context, currency string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/rates/EUR/%s", c.RatesURL, currency), nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Rate float64 `json:"rate"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	return body.Rate, nil
}

func (c *Converter) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p priced
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	r, err := c.rate(ctx, p.Currency)
	if err != nil {
		return fmt.Errorf("rate %s: %w", p.Currency, err)
	}
	_, err = tx.Exec(ctx, `UPDATE bookings SET local_cents = $2, local_currency = $3 WHERE id = $1`, p.BookingID, int64(float64(p.EURCents)*r), p.Currency)
	return err
}

// Run consumes priced bookings.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, ratesURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c := &Converter{RatesURL: ratesURL, HTTP: http.DefaultClient}
	cons, err := consumer.New(src, postgres.HandlerFunc(c.handle), consumer.Config{Name: "fxrates"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}
