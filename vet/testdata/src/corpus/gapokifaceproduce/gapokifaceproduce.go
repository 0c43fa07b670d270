// Package gapokifaceproduce is a correct corpus handler package (see
// vet/corpus_test.go): the announcement behind the interface field is
// written to the outbox in the claim's transaction; the sarama producer
// only relays it, outside the handler.
package gapokifaceproduce

import (
	"context"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type announcer interface {
	Announce(ctx context.Context, tx pgx.Tx, topic, key string) error
}

type outboxAnnouncer struct{}

func (outboxAnnouncer) Announce(ctx context.Context, tx pgx.Tx, topic, key string) error {
	return outbox.Send(ctx, tx, topic, &consumer.Message{ID: key, Key: key})
}

type handler struct{ events announcer }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE accounts SET verified = true WHERE id = $1", m.ID); err != nil {
		return err
	}
	return h.events.Announce(ctx, tx, "accounts.verified", m.ID)
}

// Relay publishes one announcement the outbox holds, outside any handler.
func Relay(producer sarama.SyncProducer, topic, key string) error {
	_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key)})
	return err
}

// New builds the handler.
func New() consumer.Handler {
	return postgres.HandlerFunc((&handler{events: outboxAnnouncer{}}).handle)
}
