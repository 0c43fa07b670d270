// Package gapokreturnedrepo is a correct corpus handler package (see
// vet/corpus_test.go): a helper returns the repository port for one unit
// of work, built on the handler's transaction; the handler saves through
// it, inside the claim's transaction.
package gapokreturnedrepo

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Prices is the port.
type Prices interface {
	Save(ctx context.Context, sku string, cents int) error
}

type txPrices struct{ tx pgx.Tx }

func (p txPrices) Save(ctx context.Context, sku string, cents int) error {
	_, err := p.tx.Exec(ctx, "UPDATE prices SET cents = $2 WHERE sku = $1", sku, cents)
	return err
}

type handler struct{}

func (h *handler) prices(tx pgx.Tx) Prices { return txPrices{tx} }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.prices(tx).Save(ctx, m.Key, len(m.Body))
}

// New builds the handler.
func New() consumer.Handler {
	return postgres.HandlerFunc((&handler{}).handle)
}
