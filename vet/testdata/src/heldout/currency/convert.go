// Package currency converts foreign-currency card transactions into the
// ledger currency.
package currency

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type converter struct {
	rates *rateCache
}

type cardTransaction struct {
	TxnID    string `json:"txn_id"`
	Currency string `json:"currency"`
	Cents    int64  `json:"cents"`
}

func (cv *converter) convert(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t cardTransaction
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(err)
	}
	rate, ok := cv.rates.get(t.Currency)
	if !ok {
		return fmt.Errorf("no rate for %s yet", t.Currency)
	}
	eur := int64(math.Round(float64(t.Cents) * rate))
	_, err := tx.Exec(ctx,
		`INSERT INTO converted_transactions (txn_id, currency, cents, eur_cents, rate) VALUES ($1, $2, $3, $4, $5)`,
		t.TxnID, t.Currency, t.Cents, eur, rate)
	return err
}

// Run loads the rates, keeps them fresh and consumes card transactions.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	rates := &rateCache{pool: pool, log: log}
	if err := rates.load(ctx); err != nil {
		return fmt.Errorf("initial fx load: %w", err)
	}
	go rates.refresh(ctx, time.Minute)
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "cards.transactions", "currency")
	if err != nil {
		return err
	}
	cv := &converter{rates: rates}
	c, err := consumer.New(src, postgres.HandlerFunc(cv.convert), consumer.Config{Name: "currency"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
