// Package orders turns checkouts into orders.
package orders

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout/orders/warehouse"
	"heldout/platform/pipeline"
)

// Orders creates orders from checkouts.
type Orders struct {
	warehouse *warehouse.Client
}

type checkoutCompleted struct {
	CheckoutID string           `json:"checkout_id"`
	CustomerID string           `json:"customer_id"`
	Items      []warehouse.Item `json:"items"`
}

func (o *Orders) create(ctx context.Context, tx pgx.Tx, ev checkoutCompleted) error {
	orderID := "ord-" + ev.CheckoutID
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id, customer_id, state) VALUES ($1, $2, 'new')`, orderID, ev.CustomerID); err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	for _, it := range ev.Items {
		if _, err := tx.Exec(ctx, `INSERT INTO order_items (order_id, sku, qty) VALUES ($1, $2, $3)`, orderID, it.SKU, it.Qty); err != nil {
			return fmt.Errorf("insert item: %w", err)
		}
	}
	return o.warehouse.Reserve(ctx, orderID, ev.Items) // want "HTTP POST inside the transactional handler"
}

// Run consumes checkout.completed.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, warehouseURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	o := &Orders{warehouse: warehouse.NewClient(warehouseURL)}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:  "checkout.completed",
		Name:    "orders",
		Handler: pipeline.Typed(o.create),
	})
}
