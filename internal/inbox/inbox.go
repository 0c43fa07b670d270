// Package inbox hands deliveries from an adapter's consume goroutines (an
// AMQP delivery channel, JetStream callbacks) to its Source.Receive in
// batches: producers Put and go on, and Receive takes everything queued, up
// to its max, in one call, so the runtime's intake wakes once a batch
// rather than once a message.
package inbox

import (
	"context"
	"sync"

	"github.com/oncely/oncely/consumer"
)

// Inbox is a queue of deliveries with one waiting Receive. The zero value
// is not usable: make one with New. Its methods are safe for concurrent use.
type Inbox[T consumer.Delivery] struct {
	cfg Config[T]

	mu    sync.Mutex
	items []T
	ready chan struct{} // one pending signal: items is not empty
}

// Config holds an Inbox's hooks; both are optional.
type Config[T consumer.Delivery] struct {
	// Live reports whether a queued delivery may still be handed out when
	// Receive takes it; one that is not is dropped (its lease was lost).
	// Nil: every delivery is live.
	Live func(T) bool
	// Taken is called, under the Inbox's lock, for each delivery that
	// leaves it through Receive, handed out or dropped. Nil: nothing.
	Taken func(T)
}

// New returns an empty Inbox.
func New[T consumer.Delivery](cfg Config[T]) *Inbox[T] {
	return &Inbox[T]{cfg: cfg, ready: make(chan struct{}, 1)}
}

// Put queues d.
func (b *Inbox[T]) Put(d T) {
	b.mu.Lock()
	b.items = append(b.items, d)
	b.mu.Unlock()
	b.signal()
}

func (b *Inbox[T]) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// Len returns how many deliveries are queued.
func (b *Inbox[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// Remove drops every queued delivery for which drop reports true, without
// calling Taken.
func (b *Inbox[T]) Remove(drop func(T) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.items[:0]
	for _, d := range b.items {
		if !drop(d) {
			kept = append(kept, d)
		}
	}
	clear(b.items[len(kept):])
	b.items = kept
}

// Receive returns up to n (at least 1) queued live deliveries, waiting
// for at least one. It returns ctx.Err() when ctx is done and
// consumer.ErrSourceClosed once closing is closed, even with deliveries
// queued (the Source gives those back).
func (b *Inbox[T]) Receive(ctx context.Context, closing <-chan struct{}, n int) ([]consumer.Delivery, error) {
	n = max(n, 1)
	for {
		select {
		case <-closing:
			return nil, consumer.ErrSourceClosed
		default:
		}
		if ds := b.take(n); len(ds) > 0 {
			return ds, nil
		}
		select {
		case <-b.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-closing:
			return nil, consumer.ErrSourceClosed
		}
	}
}

// take removes up to n live deliveries from the front of the queue (and
// the dead ones among them) and returns the live ones.
func (b *Inbox[T]) take(n int) []consumer.Delivery {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]consumer.Delivery, 0, min(n, len(b.items)))
	i := 0
	for ; i < len(b.items) && len(out) < n; i++ {
		d := b.items[i]
		if b.cfg.Live == nil || b.cfg.Live(d) {
			out = append(out, d)
		}
		if b.cfg.Taken != nil {
			b.cfg.Taken(d)
		}
	}
	rest := copy(b.items, b.items[i:])
	clear(b.items[rest:])
	b.items = b.items[:rest]
	if rest > 0 {
		b.signal() // for the next Receive
	}
	return out
}
