// Package bugifacebound is a corpus handler package with a bug (see vet/corpus_test.go).
package bugifacebound

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

type handler struct{ db db }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := h.db.Exec(ctx, "INSERT INTO likes (id) VALUES ($1)", m.ID) // want `outside the claim's transaction`
	return err
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{db: pool}
	return postgres.HandlerFunc(h.handle)
}
