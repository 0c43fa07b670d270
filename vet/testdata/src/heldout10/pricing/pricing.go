// Package pricing quotes cart totals from cart events on Kafka: the tax rate
// is read from the reference tables, the quote is written with the claim.
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
)

// Config wires the service.
type Config struct {
	Kafka string
	Pool  *pgxpool.Pool
}

// Run consumes cart events until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	pool := cfg.Pool

	// taxRate reads the reference table; rates change by migration only, so
	// reading outside the claim's transaction is fine.
	taxRate := func(ctx context.Context, country string) (int64, error) {
		var bp int64
		err := pool.QueryRow(ctx, `SELECT basis_points FROM tax_rates WHERE country = $1`, country).Scan(&bp)
		return bp, err
	}

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "carts", "pricing")
	if err != nil {
		return err
	}

	quote := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var cart struct {
			ID       string  `json:"id"`
			Country  string  `json:"country"`
			Subtotal int64   `json:"subtotal"`
			Lines    []int64 `json:"lines"`
		}
		if err := json.Unmarshal(msg.Body, &cart); err != nil {
			return consumer.Permanent(err)
		}
		bp, err := taxRate(ctx, cart.Country)
		if err != nil {
			return fmt.Errorf("tax rate %s: %w", cart.Country, err)
		}
		tax := cart.Subtotal * bp / 10000
		_, err = tx.Exec(ctx, `INSERT INTO quotes (cart_id, subtotal, tax, total) VALUES ($1, $2, $3, $4)
			ON CONFLICT (cart_id) DO UPDATE SET subtotal = EXCLUDED.subtotal, tax = EXCLUDED.tax, total = EXCLUDED.total`,
			cart.ID, cart.Subtotal, tax, cart.Subtotal+tax)
		return err
	})

	c, err := consumer.New(src, quote, consumer.Config{Name: "pricing", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
