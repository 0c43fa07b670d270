// Package holdbugtxfield is a held-out corpus package: the transaction
// parked in a field that a background flusher reads.
package holdbugtxfield

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type buffer struct {
	mu  sync.Mutex
	tx  pgx.Tx
	ids []string
}

func (b *buffer) flush(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range b.ids {
		_, _ = b.tx.Exec(ctx, "INSERT INTO c (id) VALUES ($1)", id)
	}
}

func (b *buffer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	b.mu.Lock()
	b.tx = tx // want `handler's transaction`
	b.ids = append(b.ids, m.ID)
	b.mu.Unlock()
	return nil
}

func New(ctx context.Context) consumer.Handler {
	b := &buffer{}
	go b.flush(ctx)
	return postgres.HandlerFunc(b.handle)
}
