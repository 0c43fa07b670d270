// Package flowbugdeps is a corpus package: a handler given the service's
// dependencies, whose order queries the wiring package built over the pool.
package flowbugdeps

import (
	"context"

	"corpus/internal/wiring"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ deps *wiring.Deps }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE carts SET checked_out = true WHERE order_id = $1", m.ID); err != nil {
		return err
	}
	return h.deps.Orders.InsertOrder(ctx, m.ID, 0) // want `outside the claim's transaction`
}

// New builds the handler.
func New(deps *wiring.Deps) consumer.Handler {
	return postgres.HandlerFunc((&handler{deps: deps}).handle)
}
