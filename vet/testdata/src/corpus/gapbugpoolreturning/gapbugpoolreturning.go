// Package gapbugpoolreturning is a corpus handler package with a bug (see
// vet/corpus_test.go): an INSERT … RETURNING through the pool's QueryRow
// is a write, though QueryRow usually reads.
package gapbugpoolreturning

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ pool *pgxpool.Pool }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var id int64
	if err := h.pool.QueryRow(ctx, "INSERT INTO tickets (ref) VALUES ($1) RETURNING id", m.ID).Scan(&id); err != nil { // want `\*pgxpool.Pool.QueryRow runs outside`
		return err
	}
	_, err := tx.Exec(ctx, "UPDATE refs SET ticket = $2 WHERE ref = $1", m.ID, id)
	return err
}

// New builds the handler over pool.
func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool}).handle)
}
