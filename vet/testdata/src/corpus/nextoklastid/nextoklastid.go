// Package nextoklastid is a held-out corpus package (third round): the
// handler keeps the last message ID and a counter for its status page.
package nextoklastid

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	mu      sync.Mutex
	lastID  string
	handled int
	lastErr error
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO seen (id) VALUES ($1)", m.ID)
	h.mu.Lock()
	h.lastID = m.ID
	h.handled++
	h.lastErr = err
	h.mu.Unlock()
	return err
}

func (h *handler) Status() (string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastID, h.handled
}

func New() consumer.Handler { return postgres.HandlerFunc((&handler{}).handle) }
