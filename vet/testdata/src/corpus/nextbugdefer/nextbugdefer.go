// Package nextbugdefer is a held-out corpus package (third round): a
// deferred counter update through the pool.
package nextbugdefer

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ pool *pgxpool.Pool }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	defer h.pool.Exec(ctx, "UPDATE counters SET n = n + 1 WHERE name = 'handled'") // want `outside the claim's transaction`
	_, err := tx.Exec(ctx, "INSERT INTO events (id) VALUES ($1)", m.ID)
	return err
}

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool}).handle)
}
