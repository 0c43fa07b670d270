// Package gapbugifacepool is a corpus handler package with a bug (see
// vet/corpus_test.go): a ledger whose interface field (a pool or a
// transaction) the constructor binds to the pool; the handler credits
// through it.
package gapbugifacepool

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

type service struct{ ledger ledger }

func (s *service) onPurchase(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE members SET seen = now() WHERE id = $1", m.ID); err != nil {
		return err
	}
	return s.ledger.credit(ctx, m.ID, 10) // want `db.Exec runs outside the claim's transaction`
}

// New builds the service over pool.
func New(pool *pgxpool.Pool) consumer.Handler {
	s := &service{ledger: ledger{db: pool}}
	return postgres.HandlerFunc(s.onPurchase)
}
