// Package flowbugfuncfield is a corpus package: a recording function chosen
// at start — through the claim's transaction, or, with the "fast path"
// flag, through the pool.
package flowbugfuncfield

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type recorder struct{ pool *pgxpool.Pool }

func (r *recorder) inTx(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, "INSERT INTO clicks (id) VALUES ($1)", id)
	return err
}

func (r *recorder) direct(ctx context.Context, _ pgx.Tx, id string) error {
	_, err := r.pool.Exec(ctx, "INSERT INTO clicks (id) VALUES ($1)", id) // want `outside the claim's transaction`
	return err
}

type handler struct {
	record func(ctx context.Context, tx pgx.Tx, id string) error
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.record(ctx, tx, m.ID)
}

// New builds the handler; fastPath skips the transaction.
func New(pool *pgxpool.Pool, fastPath bool) consumer.Handler {
	r := &recorder{pool: pool}
	h := &handler{record: r.inTx}
	if fastPath {
		h.record = r.direct
	}
	return postgres.HandlerFunc(h.handle)
}
