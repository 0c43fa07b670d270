package rabbitmq

import (
	"context"
	"sync"
)

// tracker counts operations in flight and lets Close wait for none. The
// channel Close waits on is made only when someone waits.
type tracker struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while no one waits
}

func (t *tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	if t.n--; t.n == 0 && t.zero != nil {
		close(t.zero)
		t.zero = nil
	}
	t.mu.Unlock()
}

func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	if t.zero == nil {
		t.zero = make(chan struct{})
	}
	z := t.zero
	t.mu.Unlock()
	select {
	case <-z:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
