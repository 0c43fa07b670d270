// Package gapbugworkerctx is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler gives its context, which carries the
// claim's transaction, to a worker pool's Submit, which queues it on a
// channel for long-lived workers; they use the transaction after the
// handler returned. The bug is the handler's call: the pool sends what it
// is given.
package gapbugworkerctx

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type job struct {
	ctx context.Context
	id  string
}

type workers struct{ jobs chan job }

func newWorkers(n int) *workers {
	w := &workers{jobs: make(chan job, 64)}
	for range n {
		go w.run()
	}
	return w
}

// Submit queues id for a worker.
func (w *workers) Submit(ctx context.Context, id string) {
	w.jobs <- job{ctx: ctx, id: id}
}

func (w *workers) run() {
	for j := range w.jobs {
		if tx, ok := postgres.Tx(j.ctx); ok {
			_, _ = tx.Exec(j.ctx, "UPDATE readings SET enriched = true WHERE id = $1", j.id)
		}
	}
}

type handler struct{ w *workers }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO readings (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	h.w.Submit(ctx, m.ID) // want `the handler's context ctx is sent on a channel`
	return nil
}

// New builds the handler.
func New() consumer.Handler {
	return postgres.HandlerFunc((&handler{w: newWorkers(4)}).handle)
}
