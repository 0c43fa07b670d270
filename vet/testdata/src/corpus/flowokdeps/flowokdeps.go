// Package flowokdeps is a correct corpus package: the service's
// dependencies used at start (a health check through the pool) and, in the
// handler, the order queries rebound to the claim's transaction.
package flowokdeps

import (
	"context"

	"corpus/internal/wiring"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ deps *wiring.Deps }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.deps.Orders.WithTx(tx).InsertOrder(ctx, m.ID, 0)
}

// New checks the database and builds the handler.
func New(ctx context.Context, deps *wiring.Deps) (consumer.Handler, error) {
	if err := deps.Health(ctx); err != nil {
		return nil, err
	}
	return postgres.HandlerFunc((&handler{deps: deps}).handle), nil
}
