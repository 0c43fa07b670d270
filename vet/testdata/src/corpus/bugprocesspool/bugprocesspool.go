// Package bugprocesspool is a corpus handler package with a bug (see vet/corpus_test.go).
package bugprocesspool

import (
	"context"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type worker struct {
	st   *postgres.Store
	pool *pgxpool.Pool
}

func (w *worker) Handle(ctx context.Context, m *consumer.Message) error {
	_, err := w.st.Process(ctx, "points", m.ID, func(ctx context.Context) error {
		_, err := w.pool.Exec(ctx, "UPDATE points SET n = n + 10 WHERE user_id = $1", m.ID) // want `outside the claim's transaction`
		return err
	})
	return err
}
