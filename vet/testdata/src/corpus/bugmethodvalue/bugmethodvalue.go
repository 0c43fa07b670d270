// Package bugmethodvalue is a corpus handler package with a bug (see vet/corpus_test.go).
package bugmethodvalue

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	exec func(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := h.exec(ctx, "INSERT INTO clicks (id) VALUES ($1)", m.ID) // want `outside the claim's transaction`
	return err
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{exec: pool.Exec}
	return postgres.HandlerFunc(h.handle)
}
