// Package gapbugrebindlate is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler copies the pool-bound queries into a
// local and rebinds it to the claim's transaction, but only after the
// first write: that insert commits on its own and repeats on every
// redelivery. The write after the rebinding is in the transaction.
package gapbugrebindlate

import (
	"context"

	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type orders struct{ q *orderdb.Queries }

func (o *orders) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	q := o.q
	if err := q.InsertOrder(ctx, m.ID, 0); err != nil { // want `q.InsertOrder runs outside the claim's transaction`
		return err
	}
	q = q.WithTx(tx)
	return q.InsertOrder(ctx, m.ID+"-fee", 25)
}

// New returns the orders handler behind the Postgres claim.
func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&orders{q: orderdb.New(pool)}).handle)
}
