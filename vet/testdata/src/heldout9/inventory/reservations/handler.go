// Package reservations reserves stock for new orders.
package reservations

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout9/inventory/stock"
)

// Reserver holds stock for orders.
type Reserver struct {
	levels *stock.Levels
	log    *slog.Logger
}

// NewReserver returns a reserver sharing levels.
func NewReserver(levels *stock.Levels, log *slog.Logger) *Reserver {
	return &Reserver{levels: levels, log: log}
}

type line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Reserve decrements stock for each line of the order.
func (r *Reserver) Reserve(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var lines []line
	if err := json.Unmarshal(msg.Body, &lines); err != nil {
		return consumer.Permanent(err)
	}
	for _, l := range lines {
		if _, err := tx.Exec(ctx, `UPDATE stock SET on_hand = on_hand - $2 WHERE sku = $1`, l.SKU, l.Qty); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reservations (order_id, sku, qty) VALUES ($1, $2, $3)`, msg.Key, l.SKU, l.Qty); err != nil {
			return err
		}
		sku := l.SKU
		go func() { // want "."
			for i := 0; i < 3; i++ {
				if err := r.levels.Refresh(ctx, tx, sku); err == nil {
					return
				}
				time.Sleep(time.Duration(50<<i) * time.Millisecond)
			}
			r.log.Warn("stock cache not refreshed", "sku", sku)
		}()
	}
	return nil
}

// Release gives stock back for a cancelled order.
func (r *Reserver) Release(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE stock s SET on_hand = s.on_hand + r.qty FROM reservations r WHERE r.order_id = $1 AND r.sku = s.sku`, msg.Key)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `DELETE FROM reservations WHERE order_id = $1`, msg.Key)
	return err
}
