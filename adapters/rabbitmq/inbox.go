package rabbitmq

import (
	"context"
	"sync"

	"github.com/oncely/oncely/consumer"
)

// inbox buffers deliveries between the consume goroutine and Receive.
type inbox struct {
	mu    sync.Mutex
	items []*delivery
	ready chan struct{} // signalled (cap 1) when items were added
}

func (b *inbox) push(d *delivery) {
	b.mu.Lock()
	b.items = append(b.items, d)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// take removes and returns up to max live deliveries.
func (b *inbox) take(max int) []consumer.Delivery {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []consumer.Delivery
	i := 0
	for ; i < len(b.items) && len(out) < max; i++ {
		if d := b.items[i]; !d.sess.isLost() {
			out = append(out, d)
		}
		b.items[i] = nil
	}
	b.items = b.items[i:]
	if len(b.items) == 0 {
		b.items = nil
	} else {
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
	return out
}

// purge drops the buffered deliveries of a lost session.
func (b *inbox) purge(sess *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.items[:0]
	for _, d := range b.items {
		if d.sess != sess {
			kept = append(kept, d)
		}
	}
	clear(b.items[len(kept):])
	b.items = kept
}

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
