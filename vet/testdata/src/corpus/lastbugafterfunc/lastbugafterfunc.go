// Package lastbugafterfunc is a held-out corpus package (fourth round): a
// delayed follow-up scheduled with the transaction.
package lastbugafterfunc

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO trials (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	time.AfterFunc(time.Hour, func() { // want `handler's transaction`
		_, _ = tx.Exec(context.Background(), "UPDATE trials SET reminded = true WHERE id = $1", m.ID)
	})
	return nil
}

func New() consumer.Handler { return postgres.HandlerFunc(Handle) }
