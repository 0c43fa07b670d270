// Package outboxpub publishes domain events through the transactional
// outbox: an event becomes a row of the unit of work's transaction, and the
// relay sends it after the commit.
package outboxpub

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

// Publisher is a commission.EventPublisher bound to one transaction.
type Publisher struct {
	tx pgx.Tx
}

// In returns a publisher writing to tx's outbox.
func In(tx pgx.Tx) *Publisher { return &Publisher{tx: tx} }

// Publish queues event for topic.
func (p *Publisher) Publish(ctx context.Context, topic, key string, event any) error {
	body, err := json.Marshal(event)
	if err != nil {
		return err
	}
	return outbox.Send(ctx, p.tx, topic, &consumer.Message{Key: key, Body: body})
}
