// Package gapokfuncdeps is a correct corpus handler package (see
// vet/corpus_test.go): the dependencies' write closure is given the
// claim's transaction; the read closure reads limits through the pool.
package gapokfuncdeps

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type deps struct {
	limit  func(ctx context.Context, user string) (int, error)
	record func(ctx context.Context, tx pgx.Tx, user string) error
}

type handler struct{ deps deps }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	n, err := h.deps.limit(ctx, m.ID)
	if err != nil || n == 0 {
		return err
	}
	return h.deps.record(ctx, tx, m.ID)
}

// New wires the handler's dependencies over pool.
func New(pool *pgxpool.Pool) consumer.Handler {
	d := deps{
		limit: func(ctx context.Context, user string) (int, error) {
			var n int
			err := pool.QueryRow(ctx, "SELECT lim FROM limits WHERE user_id = $1", user).Scan(&n)
			return n, err
		},
		record: func(ctx context.Context, tx pgx.Tx, user string) error {
			_, err := tx.Exec(ctx, "INSERT INTO deliveries (user_id) VALUES ($1)", user)
			return err
		},
	}
	return postgres.HandlerFunc((&handler{deps: d}).handle)
}
