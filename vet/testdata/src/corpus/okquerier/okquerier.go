// Package okquerier is a corpus handler package (see vet/corpus_test.go).
package okquerier

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

func insertLine(ctx context.Context, q querier, id string) error {
	_, err := q.Exec(ctx, "INSERT INTO lines (id) VALUES ($1)", id)
	return err
}

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return insertLine(ctx, tx, m.ID)
}

var _ = postgres.HandlerFunc(handle)
