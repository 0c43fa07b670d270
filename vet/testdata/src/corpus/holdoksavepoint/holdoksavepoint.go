// Package holdoksavepoint is a held-out corpus package: a savepoint in the
// claim's transaction.
package holdoksavepoint

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, "INSERT INTO e (id) VALUES ($1)", m.ID); err != nil {
		_ = sp.Rollback(ctx)
		return nil // a duplicate row is fine; the claim still commits
	}
	return sp.Commit(ctx)
}

var _ = postgres.HandlerFunc(handle)
