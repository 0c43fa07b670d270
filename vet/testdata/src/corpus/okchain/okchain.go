// Package okchain is a corpus handler package (see vet/corpus_test.go).
package okchain

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO shipments (id) VALUES ($1)", m.ID)
	return err
}

func Wire(src consumer.Source, st *postgres.Store) (*consumer.Consumer, error) {
	h := consumer.Chain(postgres.HandlerFunc(handle), middleware.Logging(), middleware.Idempotency(st))
	return consumer.New(src, h, consumer.Config{Name: "shipments"})
}
