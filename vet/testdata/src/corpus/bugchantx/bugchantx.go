// Package bugchantx is a corpus handler package with a bug (see vet/corpus_test.go).
package bugchantx

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type job struct {
	ctx context.Context
	tx  pgx.Tx
	id  string
}

type handler struct{ jobs chan job }

func (h *handler) worker() {
	for j := range h.jobs {
		_, _ = j.tx.Exec(j.ctx, "INSERT INTO thumbnails (id) VALUES ($1)", j.id)
	}
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	h.jobs <- job{ctx: ctx, tx: tx, id: m.ID} // want `handler's transaction`
	return nil
}

func New() consumer.Handler {
	h := &handler{jobs: make(chan job, 16)}
	go h.worker()
	return postgres.HandlerFunc(h.handle)
}
