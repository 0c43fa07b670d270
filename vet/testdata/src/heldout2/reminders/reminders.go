// Package reminders stores appointment reminders and confirms them in bulk.
package reminders

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Handler records reminders; confirmations are batched.
type Handler struct {
	mu      sync.Mutex
	confirm []func() error
}

// Handle records one reminder from the claim's transaction.
func (h *Handler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return consumer.Permanent(errNoTx)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO reminders (id, due) VALUES ($1, $2)`, msg.ID, msg.Headers["due"]); err != nil {
		return err
	}
	h.mu.Lock()
	h.confirm = append(h.confirm, func() error { // want "stored"
		_, err := tx.Exec(ctx, `UPDATE reminders SET confirmed = true WHERE id = $1`, msg.ID)
		return err
	})
	h.mu.Unlock()
	return nil
}

// Flush runs the confirmations collected since the last flush, every interval.
func (h *Handler) Flush(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		batch := h.confirm
		h.confirm = nil
		h.mu.Unlock()
		for _, fn := range batch {
			if err := fn(); err != nil {
				slog.Error("confirm reminder", "err", err)
			}
		}
	}
}
