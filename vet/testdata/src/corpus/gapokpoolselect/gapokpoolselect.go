// Package gapokpoolselect is a correct corpus handler package (see
// vet/corpus_test.go): a SELECT through the pool (rates that change
// rarely) and through generated query code built from the pool; the
// writes go through the claim's transaction.
package gapokpoolselect

import (
	"context"

	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	pool *pgxpool.Pool
	q    *orderdb.Queries
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var rate int64
	if err := h.pool.QueryRow(ctx, `-- current rate
SELECT cents FROM rates WHERE id = $1`, m.ID).Scan(&rate); err != nil {
		return err
	}
	total, err := h.q.OrderTotal(ctx, m.ID)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO quotes (id, cents) VALUES ($1, $2)", m.ID, rate*total)
	return err
}

// New builds the handler over pool.
func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool, q: orderdb.New(pool)}).handle)
}
