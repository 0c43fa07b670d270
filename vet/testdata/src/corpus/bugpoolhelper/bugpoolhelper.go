// Package bugpoolhelper is a corpus handler package with a bug (see vet/corpus_test.go).
package bugpoolhelper

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type repo struct{ pool *pgxpool.Pool }

func (r *repo) markShipped(ctx context.Context, id string) error {
	_, err := r.pool.Exec(ctx, "UPDATE orders SET shipped = true WHERE id = $1", id)
	return err
}

type handler struct{ repo *repo }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO shipments (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	return h.repo.markShipped(ctx, m.ID) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{repo: &repo{pool: pool}}
	return postgres.HandlerFunc(h.handle)
}
