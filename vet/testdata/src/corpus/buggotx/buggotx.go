// Package buggotx is a corpus handler package with a bug (see vet/corpus_test.go).
package buggotx

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func audit(ctx context.Context, tx pgx.Tx, id string) {
	_, _ = tx.Exec(ctx, "INSERT INTO audit (id) VALUES ($1)", id)
}

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	go audit(ctx, tx, m.ID) // want `goroutine captures the handler's`
	_, err := tx.Exec(ctx, "INSERT INTO orders (id) VALUES ($1)", m.ID)
	return err
}

var Handler = postgres.HandlerFunc(handle)
