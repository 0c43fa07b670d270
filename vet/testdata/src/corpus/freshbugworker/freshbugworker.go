// Package freshbugworker is a held-out corpus package (second round): the
// transaction handed to a worker pool the package runs.
package freshbugworker

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type task struct {
	ctx context.Context
	tx  pgx.Tx
	id  string
}

type workers struct{ tasks chan task }

func (w *workers) run() {
	for t := range w.tasks {
		_, _ = t.tx.Exec(t.ctx, "UPDATE thumbnails SET done = true WHERE id = $1", t.id)
	}
}

func (w *workers) submit(t task) { w.tasks <- t }

type handler struct{ w *workers }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	h.w.submit(task{ctx: ctx, tx: tx, id: m.ID}) // want `t, a value holding the handler.s transaction, is sent on a channel`
	return nil
}

func New() consumer.Handler {
	w := &workers{tasks: make(chan task, 16)}
	for range 4 {
		go w.run()
	}
	return postgres.HandlerFunc((&handler{w: w}).handle)
}
