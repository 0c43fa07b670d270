package warehousepick

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/oncely/oncely/consumer"
)

type orderLines struct {
	OrderID string `json:"order_id"`
	Lines   []struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
		Bin string `json:"bin"`
	} `json:"lines"`
}

func (t *tasks) createPicks(ctx context.Context, msg *consumer.Message) error {
	var o orderLines
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(fmt.Errorf("decode order: %w", err))
	}
	for _, l := range o.Lines {
		if _, err := t.pool.Exec(ctx,
			`INSERT INTO pick_tasks (order_id, sku, qty, bin, state) VALUES ($1, $2, $3, $4, 'open')`,
			o.OrderID, l.SKU, l.Qty, l.Bin); err != nil {
			return fmt.Errorf("pick task %s/%s: %w", o.OrderID, l.SKU, err)
		}
	}
	return nil
}

func (t *tasks) cancelPicks(ctx context.Context, msg *consumer.Message) error {
	_, err := t.pool.Exec(ctx, `UPDATE pick_tasks SET state = 'cancelled' WHERE order_id = $1 AND state = 'open'`, msg.Key)
	return err
}

func (t *tasks) rush(ctx context.Context, msg *consumer.Message) error {
	_, err := t.pool.Exec(ctx, `UPDATE pick_tasks SET priority = priority + 10 WHERE order_id = $1`, msg.Key)
	return err
}
