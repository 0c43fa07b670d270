// Package gapokrebindtx is a correct corpus handler package (see
// vet/corpus_test.go): the handler copies the pool-bound queries into a
// local and rebinds the local to the claim's transaction before any
// write; every insert, in the loop too, goes through the transaction.
package gapokrebindtx

import (
	"context"
	"strings"

	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type orders struct{ q *orderdb.Queries }

func (o *orders) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	q := o.q
	q = q.WithTx(tx)
	for _, line := range strings.Split(string(m.Body), "\n") {
		if err := q.InsertOrder(ctx, m.ID+"/"+line, 0); err != nil {
			return err
		}
	}
	return nil
}

// New returns the orders handler behind the Postgres claim.
func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&orders{q: orderdb.New(pool)}).handle)
}
