// Package freshbugafter is a held-out corpus package (second round): work
// that captures the transaction queued for a background loop.
package freshbugafter

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	mu      sync.Mutex
	pending []func(context.Context) error
}

func (h *handler) loop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for range t.C {
		h.mu.Lock()
		work := h.pending
		h.pending = nil
		h.mu.Unlock()
		for _, w := range work {
			_ = w(ctx)
		}
	}
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, func(ctx context.Context) error { // want `handler's transaction`
		_, err := tx.Exec(ctx, "UPDATE stats SET n = n + 1 WHERE id = $1", m.ID)
		return err
	})
	return nil
}

func New(ctx context.Context) consumer.Handler {
	h := &handler{}
	go h.loop(ctx)
	return postgres.HandlerFunc(h.handle)
}
