// Package inventorysync applies stock movements from the warehouses and
// feeds the storefront's availability topic.
package inventorysync

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/segmentio/kafka-go"
)

type movement struct {
	SKU       string `json:"sku"`
	Warehouse string `json:"warehouse"`
	Delta     int64  `json:"delta"`
}

// Syncer applies movements in batches.
type Syncer struct {
	availability *kafka.Writer
}

func (s *Syncer) apply(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	b := &pgx.Batch{}
	touched := map[string]struct{}{}
	for _, m := range msgs {
		var mv movement
		if err := json.Unmarshal(m.Body, &mv); err != nil {
			return consumer.Permanent(fmt.Errorf("decode movement %s: %w", m.ID, err))
		}
		b.Queue(`INSERT INTO stock (sku, warehouse, on_hand) VALUES ($1, $2, $3)
			ON CONFLICT (sku, warehouse) DO UPDATE SET on_hand = stock.on_hand + EXCLUDED.on_hand`, mv.SKU, mv.Warehouse, mv.Delta)
		touched[mv.SKU] = struct{}{}
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("apply movements: %w", err)
	}
	out := make([]kafka.Message, 0, len(touched))
	for sku := range touched {
		var total int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(on_hand), 0) FROM stock WHERE sku = $1`, sku).Scan(&total); err != nil {
			return fmt.Errorf("total of %s: %w", sku, err)
		}
		out = append(out, kafka.Message{Key: []byte(sku), Value: []byte(strconv.FormatInt(total, 10))})
	}
	return s.availability.WriteMessages(ctx, out...) // want "availability published to Kafka inside the batch claim transaction instead of the outbox"
}
