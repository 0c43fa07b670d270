package carts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type cartCheckedOut struct {
	CartID     string `json:"cart_id"`
	CustomerID string `json:"customer_id"`
	Items      []struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	} `json:"items"`
}

// checkoutHandler turns a checked-out cart into a pending order, priced from
// the catalog replica.
type checkoutHandler struct {
	catalog *pgxpool.Pool // read replica of the catalog database
}

func (h *checkoutHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("carts: checkout handler needs the claim's transaction")
	}
	var c cartCheckedOut
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	var total int64
	for _, it := range c.Items {
		price, err := h.unitPrice(ctx, it.SKU)
		if err != nil {
			return err
		}
		total += price * int64(it.Qty)
		if _, err := tx.Exec(ctx, `INSERT INTO order_lines (cart_id, sku, qty, unit_cents) VALUES ($1, $2, $3, $4)`,
			c.CartID, it.SKU, it.Qty, price); err != nil {
			return fmt.Errorf("carts: line %s: %w", it.SKU, err)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO orders (cart_id, customer_id, total_cents, status) VALUES ($1, $2, $3, 'pending')`,
		c.CartID, c.CustomerID, total)
	return err
}

func (h *checkoutHandler) unitPrice(ctx context.Context, sku string) (int64, error) {
	var cents int64
	err := h.catalog.QueryRow(ctx, `SELECT price_cents FROM prices WHERE sku = $1 AND valid_to IS NULL`, sku).Scan(&cents)
	if err != nil {
		return 0, fmt.Errorf("carts: price of %s: %w", sku, err)
	}
	return cents, nil
}
