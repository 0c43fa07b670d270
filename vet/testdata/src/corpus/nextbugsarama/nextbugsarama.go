// Package nextbugsarama is a held-out corpus package (third round): a
// sarama produce inside the claim's transaction.
package nextbugsarama

import (
	"context"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ producer sarama.SyncProducer }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE invoices SET sent = true WHERE id = $1", m.ID); err != nil {
		return err
	}
	_, _, err := h.producer.SendMessage(&sarama.ProducerMessage{Topic: "invoices.sent", Value: sarama.StringEncoder(m.ID)}) // want `outside the database`
	return err
}

func New(p sarama.SyncProducer) consumer.Handler {
	return postgres.HandlerFunc((&handler{producer: p}).handle)
}
