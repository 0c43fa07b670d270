package orchard

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type priceChange struct {
	SKU        string `json:"sku"`
	PriceCents int64  `json:"price_cents"`
	Reason     string `json:"reason"`
}

func (pb *priceBook) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var pc priceChange
	if err := json.Unmarshal(msg.Body, &pc); err != nil {
		return consumer.Permanent(err)
	}
	cached, err := pb.rdb.Get(ctx, "price:"+pc.SKU).Result()
	if err == nil && cached == fmt.Sprint(pc.PriceCents) {
		pb.log.Debug("price unchanged", "sku", pc.SKU)
	}
	defer pb.rdb.Publish(ctx, pb.channel, pc.SKU) // want "outbox"

	var old int64
	if err := tx.QueryRow(ctx, `SELECT price_cents FROM prices WHERE sku = $1 FOR UPDATE`, pc.SKU).Scan(&old); err != nil {
		return fmt.Errorf("price of %s: %w", pc.SKU, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE prices SET price_cents = $2 WHERE sku = $1`, pc.SKU, pc.PriceCents); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO price_history (sku, old_cents, new_cents, reason) VALUES ($1, $2, $3, $4)`,
		pc.SKU, old, pc.PriceCents, pc.Reason)
	return err
}
