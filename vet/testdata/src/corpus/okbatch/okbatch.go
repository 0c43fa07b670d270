// Package okbatch is a corpus handler package (see vet/corpus_test.go).
package okbatch

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func handle(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	b := &pgx.Batch{}
	res := tx.SendBatch(ctx, b)
	return res.Close()
}

func Wire(src consumer.Source, st *postgres.Store) (*consumer.Consumer, error) {
	return consumer.New(src, postgres.BatchHandlerFunc(handle), consumer.Config{Name: "events"}, middleware.Idempotency(st))
}
