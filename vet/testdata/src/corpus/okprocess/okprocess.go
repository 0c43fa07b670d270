// Package okprocess is a corpus handler package (see vet/corpus_test.go).
package okprocess

import (
	"context"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type worker struct{ st *postgres.Store }

func (w *worker) handle(ctx context.Context, m *consumer.Message) error {
	_, err := w.st.Process(ctx, "emails", m.ID, func(ctx context.Context) error {
		tx, _ := postgres.Tx(ctx)
		_, err := tx.Exec(ctx, "INSERT INTO emails_sent (id) VALUES ($1)", m.ID)
		return err
	})
	return err
}
