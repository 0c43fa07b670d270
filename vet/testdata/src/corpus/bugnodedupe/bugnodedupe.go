// Package bugnodedupe is a corpus handler package with a bug (see vet/corpus_test.go).
package bugnodedupe

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO tickets (id) VALUES ($1)", m.ID)
	return err
}

func Wire(src consumer.Source) (*consumer.Consumer, error) {
	return consumer.New(src, postgres.HandlerFunc(handle), consumer.Config{Name: "tickets"}, middleware.Logging()) // want `without an idempotency middleware`
}
