// Package batcher coalesces small writes into batches: a shared Flusher
// sends what it holds every 100 ms, and a per-call Batch sends on Flush.
package batcher

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

type write struct {
	tx   pgx.Tx
	sql  string
	args []any
}

// Flusher holds writes until its ticker fires.
type Flusher struct {
	mu      sync.Mutex
	pending []write
}

// NewFlusher starts the background flush.
func NewFlusher(ctx context.Context) *Flusher {
	f := &Flusher{}
	go f.run(ctx)
	return f
}

// Add queues a statement for the next flush.
func (f *Flusher) Add(tx pgx.Tx, sql string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, write{tx: tx, sql: sql, args: args})
}

func (f *Flusher) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		batch := f.pending
		f.pending = nil
		f.mu.Unlock()
		for _, w := range batch {
			_, _ = w.tx.Exec(ctx, w.sql, w.args...)
		}
	}
}

// Batch collects statements for one transaction and sends them on Flush.
type Batch struct {
	tx    pgx.Tx
	items []write
}

// Attach sets the transaction the batch sends on.
func (b *Batch) Attach(tx pgx.Tx) { b.tx = tx }

// Queue adds a statement.
func (b *Batch) Queue(sql string, args ...any) {
	b.items = append(b.items, write{sql: sql, args: args})
}

// Flush sends the statements, one round trip each.
func (b *Batch) Flush(ctx context.Context) error {
	for _, w := range b.items {
		if _, err := b.tx.Exec(ctx, w.sql, w.args...); err != nil {
			return err
		}
	}
	b.items = nil
	return nil
}
