// Package nextbugauditpool is a held-out corpus package (third round): the
// platform's audit helper given the pool from inside the handler.
package nextbugauditpool

import (
	"context"

	"corpus/internal/audit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ pool *pgxpool.Pool }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE orders SET state = 'paid' WHERE id = $1", m.ID); err != nil {
		return err
	}
	return audit.Record(ctx, h.pool, "payments", "paid "+m.ID) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool}).handle)
}
