// Package nextbugacquire is a held-out corpus package (third round): a
// connection acquired from the pool for a session setting, then written on.
package nextbugacquire

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ pool *pgxpool.Pool }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	conn, err := h.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	_, err = conn.Exec(ctx, "INSERT INTO reports (id) VALUES ($1)", m.ID) // want `outside the claim's transaction`
	return err
}

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool}).handle)
}
