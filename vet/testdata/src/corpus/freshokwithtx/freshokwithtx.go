// Package freshokwithtx is a held-out corpus package (second round):
// generated queries built from the pool at start, bound to the claim's
// transaction in the handler with WithTx.
package freshokwithtx

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
	q := h.q.WithTx(tx)
	return q.InsertOrder(ctx, m.ID, 250)
}

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{q: orderdb.New(pool)}).handle)
}
