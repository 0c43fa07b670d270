// Package okrepo is a corpus handler package (see vet/corpus_test.go).
package okrepo

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type invoices struct{}

func (invoices) insert(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, "INSERT INTO invoices (id) VALUES ($1)", id)
	return err
}

type handler struct{ repo invoices }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.repo.insert(ctx, tx, m.ID)
}

func Wire(src consumer.Source, st *postgres.Store) (*consumer.Consumer, error) {
	h := &handler{}
	return consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "invoices"}, middleware.Idempotency(st))
}
