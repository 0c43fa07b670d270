// Package shipments books pickups for packed orders.
package shipments

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/shipping/carrier"
	"heldout9/shipping/internal/backoff"
)

type packed struct {
	OrderID string `json:"order_id"`
	Address string `json:"address"`
	Parcels int    `json:"parcels"`
}

// Handlers holds the shipment consumers' dependencies.
type Handlers struct {
	Carrier *carrier.Client
}

// Packed returns the handler for order.packed.
func (h *Handlers) Packed() consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var p packed
		if err := json.Unmarshal(msg.Body, &p); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO shipments (order_id, status) VALUES ($1, 'booking')`, p.OrderID); err != nil {
			return err
		}
		var tracking string
		err := backoff.Do(ctx, 3, 200*time.Millisecond, func() error {
			var err error
			tracking, err = h.Carrier.Book(ctx, carrier.Booking{Reference: p.OrderID, Address: p.Address, Parcels: p.Parcels}) // want "."
			return err
		})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE shipments SET status = 'booked', tracking = $2 WHERE order_id = $1`, p.OrderID, tracking)
		return err
	})
}

// Delivered returns the handler for carrier.delivered.
func (h *Handlers) Delivered() consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		_, err := tx.Exec(ctx, `UPDATE shipments SET status = 'delivered' WHERE tracking = $1`, string(msg.Body))
		return err
	})
}
