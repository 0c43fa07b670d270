// Package lastbuggenericrepo is a held-out corpus package (fourth round): a
// generic repository holding the pool.
package lastbuggenericrepo

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type Repo[T any] struct {
	pool  *pgxpool.Pool
	table string
}

func (r *Repo[T]) Put(ctx context.Context, id string, v T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = r.pool.Exec(ctx, "INSERT INTO "+r.table+" (id, doc) VALUES ($1, $2)", id, b)
	return err
}

type order struct{ ID string }

type handler struct{ orders *Repo[order] }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.orders.Put(ctx, m.ID, order{ID: m.ID}) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{orders: &Repo[order]{pool: pool, table: "orders"}}).handle)
}
