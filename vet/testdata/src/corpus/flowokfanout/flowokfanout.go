// Package flowokfanout is a correct corpus package: two lookups made
// concurrently with the handler's context by a shared helper that waits for
// both, then one write through the transaction.
package flowokfanout

import (
	"context"

	"corpus/internal/fanout"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type rates interface {
	Rate(ctx context.Context, currency string) (float64, error)
}

type handler struct{ fx rates }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var eur, usd float64
	err := fanout.All(ctx,
		func(ctx context.Context) (err error) { eur, err = h.fx.Rate(ctx, "EUR"); return err },
		func(ctx context.Context) (err error) { usd, err = h.fx.Rate(ctx, "USD"); return err },
	)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO quotes (id, eur, usd) VALUES ($1, $2, $3)", m.ID, eur, usd)
	return err
}

// New builds the handler.
func New(fx rates) consumer.Handler { return postgres.HandlerFunc((&handler{fx: fx}).handle) }
