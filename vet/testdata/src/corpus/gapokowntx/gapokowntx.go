// Package gapokowntx is a correct corpus handler package (see
// vet/corpus_test.go): the handler places stock in a savepoint of the
// claim's transaction (the store's Within, pgx.BeginFunc on the tx it is
// given).
package gapokowntx

import (
	"context"

	"corpus/internal/bins"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type putaway struct{ store *bins.Store }

func (p *putaway) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return p.store.Within(ctx, tx, func(sp pgx.Tx) error {
		return bins.Place(ctx, sp, m.Key, string(m.Body), 1)
	})
}

// New returns the put-away handler behind the Postgres claim.
func New(store *bins.Store) consumer.Handler {
	return postgres.HandlerFunc((&putaway{store: store}).handle)
}
