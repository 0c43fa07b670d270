// Package latebugbatchrepo is a held-out corpus package (fifth round): a
// batch handler whose repository of another package bumps a total through
// the pool.
package latebugbatchrepo

import (
	"context"

	"corpus/internal/ledgerrepo"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ store *ledgerrepo.Store }

func (h *handler) handleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	for _, m := range msgs {
		if err := h.store.InsertTx(ctx, tx, m.ID); err != nil {
			return err
		}
	}
	return h.store.Bump(ctx, len(msgs)) // want `outside the claim's transaction`
}

func New(s *ledgerrepo.Store) consumer.Handler {
	return postgres.BatchHandlerFunc((&handler{store: s}).handleBatch)
}
