// Package gapbugfuncdeps is a corpus handler package with a bug (see
// vet/corpus_test.go): a dependencies struct of function fields, wired by
// the constructor as closures over the pool; one writes.
package gapbugfuncdeps

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type deps struct {
	limit  func(ctx context.Context, user string) (int, error)
	record func(ctx context.Context, user string) error
}

type handler struct{ deps deps }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	n, err := h.deps.limit(ctx, m.ID)
	if err != nil || n == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO sends (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	return h.deps.record(ctx, m.ID) // want `\*pgxpool.Pool.Exec runs outside the claim's transaction`
}

// New wires the handler's dependencies over pool.
func New(pool *pgxpool.Pool) consumer.Handler {
	d := deps{
		limit: func(ctx context.Context, user string) (int, error) {
			var n int
			err := pool.QueryRow(ctx, "SELECT lim FROM limits WHERE user_id = $1", user).Scan(&n)
			return n, err
		},
		record: func(ctx context.Context, user string) error {
			_, err := pool.Exec(ctx, "INSERT INTO deliveries (user_id) VALUES ($1)", user)
			return err
		},
	}
	return postgres.HandlerFunc((&handler{deps: d}).handle)
}
