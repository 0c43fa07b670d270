// Package oktyped is a corpus handler package (see vet/corpus_test.go).
package oktyped

import (
	"context"
	"corpus/internal/typed"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type refund struct{ ID string }

func Wire(src consumer.Source, st *postgres.Store) (*consumer.Consumer, error) {
	h := postgres.HandlerFunc(typed.Func(func(ctx context.Context, tx pgx.Tx, r refund) error {
		_, err := tx.Exec(ctx, "INSERT INTO refunds (id) VALUES ($1)", r.ID)
		return err
	}))
	return consumer.New(src, h, consumer.Config{Name: "refunds"}, middleware.Idempotency(st))
}
