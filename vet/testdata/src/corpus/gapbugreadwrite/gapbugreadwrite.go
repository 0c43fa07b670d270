// Package gapbugreadwrite is a corpus handler package with a bug (see
// vet/corpus_test.go): a generated query method that starts with a SELECT
// and then writes through a helper of its package, called on queries
// built from the pool.
package gapbugreadwrite

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
	id, err := h.q.NextOpen(ctx) // want `q.NextOpen runs outside the claim's transaction`
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO picks (order_id, msg) VALUES ($1, $2)", id, m.ID)
	return err
}

// New builds the handler over pool.
func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{q: orderdb.New(pool)}).handle)
}
