// Package bugplainhandler is a corpus handler package with a bug (see vet/corpus_test.go).
package bugplainhandler

import (
	"context"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// handler is a plain consumer.Handler run behind Idempotency with the
// Postgres store: its statements belong in the claim's transaction.
type handler struct{ pool *pgxpool.Pool }

func (h *handler) Handle(ctx context.Context, m *consumer.Message) error {
	_, err := h.pool.Exec(ctx, "INSERT INTO deliveries (id) VALUES ($1)", m.ID) // want `outside the claim's transaction`
	return err
}

func Wire(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	return consumer.New(src, &handler{pool: pool}, consumer.Config{Name: "deliveries"}, middleware.Idempotency(st))
}
