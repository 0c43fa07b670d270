// Package events emits the invoicing service's domain events through the
// transactional outbox.
package events

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

// Topic names.
const (
	InvoiceIssued = "invoicing.invoice-issued"
	InvoiceVoided = "invoicing.invoice-voided"
)

// Emit records event v for topic in tx; the relay publishes it after tx
// commits.
func Emit(ctx context.Context, tx pgx.Tx, topic, key string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("events: encode %s: %w", topic, err)
	}
	return outbox.Send(ctx, tx, topic, &consumer.Message{Key: key, Body: body})
}
