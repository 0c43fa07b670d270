// Package bugpoolinline is a corpus handler package with a bug (see vet/corpus_test.go).
package bugpoolinline

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ pool *pgxpool.Pool }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO payments (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	_, err := h.pool.Exec(ctx, "UPDATE totals SET n = n + 1") // want `outside the claim's transaction`
	return err
}

func Wire(src consumer.Source, st *postgres.Store, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	h := &handler{pool: pool}
	return consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "payments"}, middleware.Idempotency(st))
}
