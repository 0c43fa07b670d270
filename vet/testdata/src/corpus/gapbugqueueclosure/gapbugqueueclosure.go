// Package gapbugqueueclosure is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler queues a closure using its transaction
// on a projector whose goroutine runs it later, after the claim's
// transaction ended. The projector's Enqueue sends whatever function it
// is given: the bug is the handler's call, and only it is reported.
package gapbugqueueclosure

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type projector struct {
	queue chan func(context.Context) error
}

// Enqueue schedules fn.
func (p *projector) Enqueue(fn func(context.Context) error) {
	p.queue <- fn
}

// Run executes queued projections until ctx ends.
func (p *projector) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case fn := <-p.queue:
			_ = fn(ctx)
		}
	}
}

type handler struct{ proj *projector }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO events (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	h.proj.Enqueue(func(ctx context.Context) error { // want `the handler's transaction tx, given to h.proj.Enqueue`
		_, err := tx.Exec(ctx, "UPDATE projections SET n = n + 1")
		return err
	})
	return nil
}

// New builds the handler.
func New() consumer.Handler {
	p := &projector{queue: make(chan func(context.Context) error, 64)}
	return postgres.HandlerFunc((&handler{proj: p}).handle)
}
