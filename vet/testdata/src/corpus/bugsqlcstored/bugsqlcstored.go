// Package bugsqlcstored is a corpus handler package with a bug (see vet/corpus_test.go).
package bugsqlcstored

import (
	"context"
	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ q *orderdb.Queries }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.q.InsertOrder(ctx, m.ID, 100) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{q: orderdb.New(pool)}
	return postgres.HandlerFunc(h.handle)
}
