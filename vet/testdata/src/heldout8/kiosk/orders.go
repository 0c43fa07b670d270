// Package kiosk turns self-service kiosk orders into kitchen tickets.
package kiosk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type kioskOrder struct {
	OrderID string   `json:"order_id"`
	Store   string   `json:"store"`
	Items   []string `json:"items"`
}

// TicketPrinter is the consumer's handler: one kitchen ticket per order.
type TicketPrinter struct {
	pool *pgxpool.Pool
}

// Handle writes the order's ticket and its items in one transaction.
func (t *TicketPrinter) Handle(ctx context.Context, msg *consumer.Message) error {
	var o kioskOrder
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	tx, err := t.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var ticket int64
	if err := tx.QueryRow(ctx, `INSERT INTO kitchen_tickets (order_id, store) VALUES ($1, $2) RETURNING id`, o.OrderID, o.Store).Scan(&ticket); err != nil {
		return fmt.Errorf("ticket for %s: %w", o.OrderID, err)
	}
	for i, item := range o.Items {
		if _, err := tx.Exec(ctx, `INSERT INTO ticket_lines (ticket_id, n, item) VALUES ($1, $2, $3)`, ticket, i+1, item); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
