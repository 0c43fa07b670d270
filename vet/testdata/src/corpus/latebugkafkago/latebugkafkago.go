// Package latebugkafkago is a held-out corpus package (fifth round): a
// kafka-go write inside the claim's transaction.
package latebugkafkago

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/segmentio/kafka-go"
)

type handler struct{ w *kafka.Writer }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE shipments SET state = 'left' WHERE id = $1", m.ID); err != nil {
		return err
	}
	return h.w.WriteMessages(ctx, kafka.Message{Key: []byte(m.ID), Value: []byte("left")}) // want `outside the database`
}

func New(w *kafka.Writer) consumer.Handler { return postgres.HandlerFunc((&handler{w: w}).handle) }
