// Package fulfillment turns paid orders into pick jobs.
package fulfillment

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/fulfillment/queue"
)

var errNoClaim = errors.New("fulfillment: OnPaid must run behind the Postgres claim")

// Picker creates pick jobs for paid orders.
type Picker struct {
	jobs *queue.Queue
}

// NewPicker returns a Picker.
func NewPicker(jobs *queue.Queue) *Picker {
	return &Picker{jobs: jobs}
}

// OnPaid handles one order.paid message in the claim's transaction.
func (p *Picker) OnPaid(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoClaim
	}
	if _, err := tx.Exec(ctx, `UPDATE orders SET state = 'picking' WHERE id = $1`, msg.Key); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return p.jobs.Enqueue(ctx, msg.Key) // want "outbox"
}
