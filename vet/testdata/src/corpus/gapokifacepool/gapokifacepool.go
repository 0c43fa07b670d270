// Package gapokifacepool is a correct corpus handler package (see
// vet/corpus_test.go): the ledger's interface field is bound to the
// claim's transaction in the handler.
package gapokifacepool

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

type ledger struct{ db execer }

func (l ledger) credit(ctx context.Context, member string, points int64) error {
	_, err := l.db.Exec(ctx, "INSERT INTO entries (member, points) VALUES ($1, $2)", member, points)
	return err
}

func onPurchase(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE members SET seen = now() WHERE id = $1", m.ID); err != nil {
		return err
	}
	return ledger{db: tx}.credit(ctx, m.ID, 10)
}

// New builds the handler.
func New() consumer.Handler {
	return postgres.HandlerFunc(onPurchase)
}
