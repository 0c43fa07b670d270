// Package lumberyard is the sawmill's data layer: cut orders and board
// stock.
package lumberyard

import (
	"context"
	"fmt"

	"heldout7/platform/pgutil"
)

// Orders reads and writes cut orders on the handle it was built with.
type Orders struct {
	db pgutil.DBTX
}

// NewOrders returns cut orders over db.
func NewOrders(db pgutil.DBTX) *Orders { return &Orders{db: db} }

// WithTx returns the same repository over tx.
func (o *Orders) WithTx(tx pgutil.DBTX) *Orders { return &Orders{db: tx} }

// MarkCut records that an order's boards were cut.
func (o *Orders) MarkCut(ctx context.Context, orderID string, boards int) error {
	tag, err := o.db.Exec(ctx, `UPDATE cut_orders SET state = 'cut', boards_cut = $2 WHERE id = $1 AND state = 'queued'`, orderID, boards)
	if err != nil {
		return fmt.Errorf("mark cut %s: %w", orderID, err)
	}
	_ = tag
	return nil
}
