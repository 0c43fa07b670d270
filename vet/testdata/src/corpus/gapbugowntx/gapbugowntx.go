// Package gapbugowntx is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler places stock through the store's InTx,
// which opens a transaction of its own on the pool (pgx.BeginFunc in
// another package): it commits apart from the claim and repeats on every
// redelivery.
package gapbugowntx

import (
	"context"

	"corpus/internal/bins"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type putaway struct{ store *bins.Store }

func (p *putaway) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return p.store.InTx(ctx, func(own pgx.Tx) error { // want `bins.InTx runs statements outside the claim's transaction`
		return bins.Place(ctx, own, m.Key, string(m.Body), 1)
	})
}

// New returns the put-away handler behind the Postgres claim.
func New(store *bins.Store) consumer.Handler {
	return postgres.HandlerFunc((&putaway{store: store}).handle)
}
