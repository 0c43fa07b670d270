// Package possales books point-of-sale receipts against store stock.
package possales

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type receipt struct {
	StoreID string `json:"store_id"`
	Lines   []struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	} `json:"lines"`
}

// SaleHandler decrements stock for each receipt line.
type SaleHandler struct {
	DB *sql.DB
}

// Handle applies one receipt.
func (h SaleHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var r receipt
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	for _, l := range r.Lines {
		if _, err := h.DB.ExecContext(ctx, `UPDATE stock SET on_hand = on_hand - $3 WHERE store_id = $1 AND sku = $2`, r.StoreID, l.SKU, l.Qty); err != nil { // want "stock decremented through the pool"
			return fmt.Errorf("decrement %s: %w", l.SKU, err)
		}
	}
	return nil
}

// Start builds the receipts consumer behind idempotency in Postgres.
func Start(ctx context.Context, db *sql.DB, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, SaleHandler{DB: db}, consumer.Config{Name: "possales"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
