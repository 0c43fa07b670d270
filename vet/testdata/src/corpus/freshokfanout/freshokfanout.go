// Package freshokfanout is a held-out corpus package (second round): a
// handler that asks a pricing service for quotes concurrently, with its
// context, joins them, and writes in the claim's transaction.
package freshokfanout

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type pricer interface {
	Quote(ctx context.Context, sku string) (int64, error)
}

type handler struct{ prices pricer }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	skus := []string{m.ID + "-a", m.ID + "-b"}
	cents := make([]int64, len(skus))
	errs := make([]error, len(skus))
	var wg sync.WaitGroup
	for i, sku := range skus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cents[i], errs[i] = h.prices.Quote(ctx, sku)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, "INSERT INTO quotes (id, a, b) VALUES ($1, $2, $3)", m.ID, cents[0], cents[1])
	return err
}

func New(p pricer) consumer.Handler {
	return postgres.HandlerFunc((&handler{prices: p}).handle)
}
