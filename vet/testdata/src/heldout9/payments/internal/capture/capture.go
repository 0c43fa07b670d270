// Package capture records captured payments.
package capture

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Captured is a typed handler for payment captures.
type Captured struct{}

type payment struct {
	ID     string `json:"id"`
	Order  string `json:"order"`
	Amount int64  `json:"amount"`
}

// Handle books the capture.
func (Captured) Handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p payment
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO captures (id, order_id, amount) VALUES ($1, $2, $3)`, p.ID, p.Order, p.Amount)
	return err
}

// Refunded books a refund.
func (Captured) Refunded(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE captures SET refunded = true WHERE id = $1`, msg.Key)
	return err
}

// Gauge counts captures seen, for a dashboard; a duplicate only nudges it.
type Gauge struct{ n atomic.Int64 }

// Observe counts one message.
func (g *Gauge) Observe(ctx context.Context, msg *consumer.Message) error {
	g.n.Add(1)
	return nil
}
