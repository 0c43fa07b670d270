// Package stationery keeps the office-supplies warehouse's stock levels from
// receipts and picks, and can rebuild them from the archived events.
package stationery

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type adjustment struct {
	SKU   string `json:"sku"`
	Delta int    `json:"delta"`
	Bin   string `json:"bin"`
}

type inventory struct{}

func (inventory) decode(msg *consumer.Message) (adjustment, error) {
	var a adjustment
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return a, consumer.Permanent(err)
	}
	return a, nil
}

func (inventory) apply(ctx context.Context, tx pgx.Tx, a adjustment) error {
	_, err := tx.Exec(ctx, `INSERT INTO stock (sku, bin, qty) VALUES ($1, $2, $3)
		ON CONFLICT (sku, bin) DO UPDATE SET qty = stock.qty + EXCLUDED.qty`, a.SKU, a.Bin, a.Delta)
	return err
}

// Receipt is the handler of goods received.
func (inv inventory) Receipt(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	a, err := inv.decode(msg)
	if err != nil {
		return err
	}
	return inv.apply(ctx, tx, a)
}

// Pick is the handler of goods picked for an order.
func (inv inventory) Pick(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	a, err := inv.decode(msg)
	if err != nil {
		return err
	}
	a.Delta = -a.Delta
	return inv.apply(ctx, tx, a)
}
