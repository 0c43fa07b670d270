// Package okcondchain is a corpus handler package (see vet/corpus_test.go).
package okcondchain

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO signups (id) VALUES ($1)", m.ID)
	return err
}

func Wire(src consumer.Source, st *postgres.Store, verbose bool) (*consumer.Consumer, error) {
	mws := []consumer.Middleware{middleware.Idempotency(st)}
	if verbose {
		mws = append([]consumer.Middleware{middleware.Logging()}, mws...)
	}
	return consumer.New(src, postgres.HandlerFunc(handle), consumer.Config{Name: "signups"}, mws...)
}
