// Package gapbugpkgpool is a corpus handler package with a bug (see
// vet/corpus_test.go): a plain function converted to consumer.HandlerFunc
// behind Idempotency with the Postgres store credits through a sub-package's
// package-level pool.
package gapbugpkgpool

import (
	"context"

	"corpus/internal/walletdb"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func topUp(ctx context.Context, m *consumer.Message) error {
	return walletdb.Credit(ctx, m.ID, 100) // want `walletdb.Credit runs statements outside the claim's transaction`
}

// Main sets the pool and wires the consumer.
func Main(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	walletdb.Pool = pool
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	return consumer.New(src, consumer.HandlerFunc(topUp), consumer.Config{Name: "wallets"}, middleware.Idempotency(st))
}
