// Package gapbugremoteseen is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler marks the message seen in Redis through
// a helper package's MarkSeen (SetNX, never released) inside the claim's
// transaction: when the transaction rolls back, the mark stays, and the
// redelivery skips the message.
package gapbugremoteseen

import (
	"context"

	"corpus/internal/doclocks"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type indexer struct{ locks *doclocks.Locks }

func (ix *indexer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	first, err := ix.locks.MarkSeen(ctx, m.ID) // want `doclocks.MarkSeen \(the Redis command SetNX\) is an effect outside the database`
	if err != nil || !first {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE documents SET indexed = now() WHERE id = $1`, m.Key)
	return err
}

// New returns the indexer behind the Postgres claim.
func New(locks *doclocks.Locks) consumer.Handler {
	return postgres.HandlerFunc((&indexer{locks: locks}).handle)
}
