// Package bugproduce is a corpus handler package with a bug (see vet/corpus_test.go).
package bugproduce

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"
)

type handler struct{ kafka *kgo.Client }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE orders SET paid = true WHERE id = $1", m.ID); err != nil {
		return err
	}
	res := h.kafka.ProduceSync(ctx, &kgo.Record{Topic: "order-paid", Value: []byte(m.ID)}) // want `use the outbox`
	if len(res) > 0 {
		return res[0].Err
	}
	return nil
}

func New(k *kgo.Client) consumer.Handler {
	return postgres.HandlerFunc((&handler{kafka: k}).handle)
}
