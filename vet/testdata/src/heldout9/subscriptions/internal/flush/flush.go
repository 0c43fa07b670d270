// Package flush runs queued work on a timer, in the background.
package flush

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Queue holds work to run at the next tick.
type Queue struct {
	mu    sync.Mutex
	items []func(context.Context) error
	log   *slog.Logger
}

// NewQueue starts a queue flushed every interval until ctx ends.
func NewQueue(ctx context.Context, interval time.Duration, log *slog.Logger) *Queue {
	q := &Queue{log: log}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				q.flush(ctx)
			}
		}
	}()
	return q
}

// Add queues fn.
func (q *Queue) Add(fn func(context.Context) error) {
	q.mu.Lock()
	q.items = append(q.items, fn)
	q.mu.Unlock()
}

func (q *Queue) flush(ctx context.Context) {
	q.mu.Lock()
	items := q.items
	q.items = nil
	q.mu.Unlock()
	for _, fn := range items {
		if err := fn(ctx); err != nil {
			q.log.Warn("flush", "err", err)
		}
	}
}
