// Package handlers holds the order service's consumers.
package handlers

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

// Set is the order service's handlers.
type Set struct {
	Log *slog.Logger
}

// Placed records a placed order and announces it.
func (s Set) Placed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var o struct {
		ID       string `json:"id"`
		Customer string `json:"customer"`
	}
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id, customer, status) VALUES ($1, $2, 'placed')`, o.ID, o.Customer); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "orders.accepted", &consumer.Message{Key: o.ID, Body: msg.Body})
}

// Paid marks an order paid.
func (s Set) Paid(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE orders SET status = 'paid' WHERE id = $1`, msg.Key)
	return err
}

// Audit appends every order event to the audit trail table.
func (s Set) Audit(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO order_audit (message_id, order_id, body) VALUES ($1, $2, $3)`, msg.ID, msg.Key, msg.Body)
	return err
}
