// Package okstartup is a corpus handler package (see vet/corpus_test.go).
package okstartup

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ limit int }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO quotas (id, lim) VALUES ($1, $2)", m.ID, h.limit)
	return err
}

// Wire reads its settings through the pool at start, outside any handler.
func Wire(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, st *postgres.Store) (*consumer.Consumer, error) {
	h := &handler{}
	if err := pool.QueryRow(ctx, "SELECT lim FROM settings").Scan(&h.limit); err != nil {
		return nil, err
	}
	return consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "quotas"}, middleware.Idempotency(st))
}
