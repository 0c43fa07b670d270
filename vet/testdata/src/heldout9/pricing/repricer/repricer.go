// Package repricer writes local-currency prices when a base price changes.
package repricer

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/pricing/rates"
	"heldout9/pricing/store"
)

// Repricer converts base prices.
type Repricer struct {
	rates      *rates.Cache
	prices     store.Prices
	currencies []string
	log        *slog.Logger
}

type changed struct {
	SKU  string `json:"sku"`
	Base int64  `json:"base_eur"`
}

func (r *Repricer) reprice(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c changed
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	if err := r.prices.Set(ctx, tx, c.SKU, "EUR", c.Base); err != nil {
		return err
	}
	for _, cur := range r.currencies {
		rate, err := r.rates.Rate(ctx, cur)
		if err != nil {
			return err
		}
		err = store.InTx(ctx, tx, func(sp pgx.Tx) error {
			return r.prices.Set(ctx, sp, c.SKU, cur, int64(math.Round(float64(c.Base)*rate)))
		})
		if err != nil {
			r.log.Warn("currency skipped", "sku", c.SKU, "currency", cur, "err", err)
		}
	}
	return nil
}

func (r *Repricer) withdraw(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `DELETE FROM prices WHERE sku = $1`, msg.Key)
	return err
}

// Start wires the repricing consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	r := &Repricer{rates: rates.NewCache(pool, 0), currencies: []string{"USD", "GBP", "CHF"}, log: log}
	for topic, fn := range map[string]func(context.Context, pgx.Tx, *consumer.Message) error{
		"prices.changed":   r.reprice,
		"prices.withdrawn": r.withdraw,
	} {
		src, err := broker.Source(ctx, topic, "repricer")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, postgres.HandlerFunc(fn), consumer.Config{Name: "repricer-" + topic}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
