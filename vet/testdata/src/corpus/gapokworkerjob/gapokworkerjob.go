// Package gapokworkerjob is a correct corpus handler package (see
// vet/corpus_test.go): the handler gives a worker pool's Submit only the
// message's id; the workers run on the pool's own context, in
// transactions of their own.
package gapokworkerjob

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type workers struct {
	ctx  context.Context
	pool *pgxpool.Pool
	ids  chan string
}

// Submit queues id for a worker.
func (w *workers) Submit(id string) {
	w.ids <- id
}

func (w *workers) run() {
	for id := range w.ids {
		_, _ = w.pool.Exec(w.ctx, "UPDATE readings SET enriched = true WHERE id = $1", id)
	}
}

type handler struct{ w *workers }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO readings (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	h.w.Submit(m.ID)
	return nil
}

// New builds the handler; its workers run until ctx ends.
func New(ctx context.Context, pool *pgxpool.Pool) consumer.Handler {
	w := &workers{ctx: ctx, pool: pool, ids: make(chan string, 64)}
	for range 4 {
		go w.run()
	}
	return postgres.HandlerFunc((&handler{w: w}).handle)
}
