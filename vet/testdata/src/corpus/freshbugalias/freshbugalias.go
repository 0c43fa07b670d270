// Package freshbugalias is a held-out corpus package (second round):
// generated queries built from the pool, taken from the handler's field
// into a local variable.
package freshbugalias

import (
	"context"

	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ queries *orderdb.Queries }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	q := h.queries
	return q.InsertOrder(ctx, m.ID, 100) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{queries: orderdb.New(pool)}
	return postgres.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		for _, m := range msgs {
			if err := h.handle(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	})
}
