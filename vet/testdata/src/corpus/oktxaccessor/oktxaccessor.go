// Package oktxaccessor is a corpus handler package (see vet/corpus_test.go).
package oktxaccessor

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func currentTx(ctx context.Context) pgx.Tx {
	tx, _ := postgres.Tx(ctx)
	return tx
}

func record(ctx context.Context, id string) error {
	_, err := currentTx(ctx).Exec(ctx, "INSERT INTO audit (id) VALUES ($1)", id)
	return err
}

func Run(ctx context.Context, st *postgres.Store, m *consumer.Message) error {
	_, err := st.Process(ctx, "audit", m.ID, func(ctx context.Context) error { return record(ctx, m.ID) })
	return err
}
