// Package fulfillment turns paid orders into pick jobs.
package fulfillment

import (
	"context"
	"fmt"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/fulfillment/queue"
)

// Picker creates pick jobs for paid orders.
type Picker struct {
	claims *postgres.Store
	jobs   *queue.Queue
}

// NewPicker returns a Picker.
func NewPicker(claims *postgres.Store, jobs *queue.Queue) *Picker {
	return &Picker{claims: claims, jobs: jobs}
}

// OnPaid handles one order.paid message under the claim.
func (p *Picker) OnPaid(ctx context.Context, msg *consumer.Message) error {
	_, err := p.claims.Process(ctx, "picker", msg.ID, func(ctx context.Context) error {
		tx, _ := postgres.Tx(ctx)
		if _, err := tx.Exec(ctx, `UPDATE orders SET state = 'picking' WHERE id = $1`, msg.Key); err != nil {
			return fmt.Errorf("state: %w", err)
		}
		return p.jobs.Enqueue(ctx, msg.Key) // want "outbox"
	})
	return err
}
