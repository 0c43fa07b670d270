// Package lastbugsavefunc is a held-out corpus package (fourth round): the
// handler given its repository's save method as a function value.
package lastbugsavefunc

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type repo struct{ pool *pgxpool.Pool }

func (r *repo) save(ctx context.Context, id string) error {
	_, err := r.pool.Exec(ctx, "INSERT INTO shipments (id) VALUES ($1)", id)
	return err
}

type handler struct {
	save func(ctx context.Context, id string) error
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.save(ctx, m.ID) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	r := &repo{pool: pool}
	return postgres.HandlerFunc((&handler{save: r.save}).handle)
}
