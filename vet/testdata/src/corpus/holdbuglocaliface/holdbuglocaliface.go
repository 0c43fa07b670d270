// Package holdbuglocaliface is a held-out corpus package: the pool chosen
// into a local interface variable.
package holdbuglocaliface

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

type handler struct {
	pool   *pgxpool.Pool
	direct bool
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var db execer = tx
	if h.direct {
		db = h.pool
	}
	_, err := db.Exec(ctx, "INSERT INTO d (id) VALUES ($1)", m.ID) // want `outside the claim's transaction`
	return err
}

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool}).handle)
}
