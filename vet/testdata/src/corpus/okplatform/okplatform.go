// Package okplatform is a corpus handler package (see vet/corpus_test.go).
package okplatform

import (
	"context"
	"corpus/internal/platform"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "UPDATE stock SET n = n - 1 WHERE sku = $1", m.ID)
	return err
}

func Wire(src consumer.Source, st *postgres.Store) error {
	if _, err := consumer.New(src, postgres.HandlerFunc(handle), consumer.Config{Name: "stock"}, platform.Standard(st)...); err != nil {
		return err
	}
	_, err := consumer.New(src, postgres.HandlerFunc(handle), consumer.Config{Name: "stock-2"}, platform.Metrics(), platform.Dedupe(st))
	return err
}
