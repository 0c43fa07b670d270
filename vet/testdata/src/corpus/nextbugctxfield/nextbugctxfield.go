// Package nextbugctxfield is a held-out corpus package (third round): the
// handler's context, which carries the claim's transaction, kept for a
// background reporter.
package nextbugctxfield

import (
	"context"
	"sync"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type reporter struct {
	mu   sync.Mutex
	ctx  context.Context
	seen int
}

func (r *reporter) run() {
	for range time.Tick(time.Minute) {
		r.mu.Lock()
		ctx := r.ctx
		r.mu.Unlock()
		if tx, ok := postgres.Tx(ctx); ok {
			_, _ = tx.Exec(ctx, "INSERT INTO progress (n) VALUES ($1)", r.seen)
		}
	}
}

func (r *reporter) Handle(ctx context.Context, m *consumer.Message) error {
	tx, _ := postgres.Tx(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO items (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	r.mu.Lock()
	r.ctx = ctx // want `handler's`
	r.seen++
	r.mu.Unlock()
	return nil
}

func New() consumer.Handler {
	r := &reporter{}
	go r.run()
	return r
}
