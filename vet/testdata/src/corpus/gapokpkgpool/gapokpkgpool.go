// Package gapokpkgpool is a correct corpus handler package (see
// vet/corpus_test.go): the plain function behind Idempotency reads through
// a sub-package's package-level pool and credits in the claim's
// transaction.
package gapokpkgpool

import (
	"context"
	"errors"

	"corpus/internal/walletdb"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func topUp(ctx context.Context, m *consumer.Message) error {
	if c, err := walletdb.Balance(ctx, m.ID); err != nil || c < 0 {
		return err
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("no claim transaction")
	}
	return walletdb.CreditTx(ctx, tx, m.ID, 100)
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
