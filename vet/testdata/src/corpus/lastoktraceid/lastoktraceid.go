// Package lastoktraceid is a held-out corpus package (fourth round): the
// handler logs with its context and keeps the last trace ID it saw.
package lastoktraceid

import (
	"context"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type traceKey struct{}

func traceID(ctx context.Context) string {
	s, _ := ctx.Value(traceKey{}).(string)
	return s
}

type handler struct {
	mu        sync.Mutex
	lastTrace string
	log       *slog.Logger
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	h.log.InfoContext(ctx, "handling", "id", m.ID)
	h.mu.Lock()
	h.lastTrace = traceID(ctx)
	h.mu.Unlock()
	_, err := tx.Exec(ctx, "INSERT INTO traced (id) VALUES ($1)", m.ID)
	return err
}

func New(l *slog.Logger) consumer.Handler { return postgres.HandlerFunc((&handler{log: l}).handle) }
