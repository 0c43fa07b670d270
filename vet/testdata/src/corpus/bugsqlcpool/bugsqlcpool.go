// Package bugsqlcpool is a corpus handler package with a bug (see vet/corpus_test.go).
package bugsqlcpool

import (
	"context"
	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ pool *pgxpool.Pool }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return orderdb.New(h.pool).InsertOrder(ctx, m.ID, 100) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool}).handle)
}
