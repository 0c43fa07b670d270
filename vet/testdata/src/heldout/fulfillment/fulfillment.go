// Package fulfillment prepares picked orders for dispatch.
package fulfillment

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/pipeline"
)

// Service prepares orders for dispatch.
type Service struct {
	labels *labelWorkers
}

// NewService starts the label workers.
func NewService(workers int) *Service {
	return &Service{labels: startLabelWorkers(workers)}
}

type orderPicked struct {
	OrderID string `json:"order_id"`
	Carrier string `json:"carrier"`
	Bin     string `json:"bin"`
}

func (s *Service) onPicked(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev orderPicked
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE orders SET state = 'packing', bin = $2 WHERE id = $1`, ev.OrderID, ev.Bin); err != nil {
		return fmt.Errorf("order state: %w", err)
	}
	done := make(chan error, 1)
	s.labels.jobs <- labelJob{ctx: ctx, tx: tx, orderID: ev.OrderID, carrier: ev.Carrier, done: done} // want "tx sent to label worker goroutines"
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run consumes orders.picked.
func (s *Service) Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:  "orders.picked",
		Name:    "fulfillment",
		Handler: postgres.HandlerFunc(s.onPicked),
	})
}
