// Package gapbugifaceproduce is a corpus handler package with a bug (see
// vet/corpus_test.go): a Kafka produce behind an interface field, whose
// implementation in the package wraps a sarama SyncProducer; the report is
// on the handler's call.
package gapbugifaceproduce

import (
	"context"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type announcer interface {
	Announce(topic, key string) error
}

type kafkaAnnouncer struct{ producer sarama.SyncProducer }

func (a kafkaAnnouncer) Announce(topic, key string) error {
	_, _, err := a.producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key)})
	return err
}

type handler struct{ events announcer }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE accounts SET verified = true WHERE id = $1", m.ID); err != nil {
		return err
	}
	return h.events.Announce("accounts.verified", m.ID) // want `the sarama SendMessage is an effect outside the database`
}

// New builds the handler over producer.
func New(producer sarama.SyncProducer) consumer.Handler {
	return postgres.HandlerFunc((&handler{events: kafkaAnnouncer{producer: producer}}).handle)
}
