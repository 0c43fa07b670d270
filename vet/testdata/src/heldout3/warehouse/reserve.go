package warehouse

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type orderPlaced struct {
	OrderID string `json:"order_id"`
	Lines   []struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	} `json:"lines"`
}

// reserver holds stock for placed orders.
type reserver struct {
	// holdStock is prepared once at start: UPDATE stock … reserved + $2.
	holdStock *sql.Stmt
}

func (r *reserver) onOrderPlaced(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var o orderPlaced
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	for _, l := range o.Lines {
		if _, err := tx.Exec(ctx, `INSERT INTO reservations (order_id, sku, qty) VALUES ($1, $2, $3)`, o.OrderID, l.SKU, l.Qty); err != nil {
			return fmt.Errorf("warehouse: reserve %s for %s: %w", l.SKU, o.OrderID, err)
		}
		if _, err := r.holdStock.ExecContext(ctx, l.SKU, l.Qty); err != nil { // want "stock held through a statement prepared on the sql.DB, outside the claim's transaction"
			return fmt.Errorf("warehouse: hold %s: %w", l.SKU, err)
		}
	}
	return nil
}
