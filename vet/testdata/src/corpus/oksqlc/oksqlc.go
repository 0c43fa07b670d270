// Package oksqlc is a corpus handler package (see vet/corpus_test.go).
package oksqlc

import (
	"context"
	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ q *orderdb.Queries }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.q.WithTx(tx).InsertOrder(ctx, m.ID, 100)
}

func handleNew(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return orderdb.New(tx).InsertOrder(ctx, m.ID, 100)
}

func Wire(src consumer.Source, st *postgres.Store, q *orderdb.Queries) error {
	h := &handler{q: q}
	if _, err := consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "orders"}, middleware.Idempotency(st)); err != nil {
		return err
	}
	_, err := consumer.New(src, postgres.HandlerFunc(handleNew), consumer.Config{Name: "orders-v2"}, middleware.Idempotency(st))
	return err
}
