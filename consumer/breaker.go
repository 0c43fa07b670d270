package consumer

import (
	"context"
	"sync"
	"sync/atomic"
)

// breaker pauses intake after threshold consecutive outage failures and
// resumes it on the next success. Held deliveries keep probing meanwhile.
type breaker struct {
	dirty       atomic.Bool // consecutive > 0 or open: success and wait must take the lock
	mu          sync.Mutex
	threshold   int
	consecutive int
	open        bool
	changed     chan struct{}
	obs         Observer
}

func (b *breaker) init(threshold int, obs Observer) {
	b.threshold = threshold
	b.changed = make(chan struct{})
	b.obs = obs
}

func (b *breaker) failure() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consecutive++
	b.dirty.Store(true)
	if !b.open && b.consecutive >= b.threshold {
		b.set(true)
	}
}

// success records a handled delivery; it costs one atomic load unless
// failures were counted or the breaker is open.
func (b *breaker) success() {
	if b.dirty.Load() {
		b.reset()
	}
}

func (b *breaker) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consecutive = 0
	if b.open {
		b.set(false)
	}
	b.dirty.Store(false) // after closing: a clean breaker is never open
}

// set must be called with mu held.
func (b *breaker) set(open bool) {
	b.open = open
	close(b.changed)
	b.changed = make(chan struct{})
	if b.obs != nil {
		b.obs.BreakerChanged(open)
	}
}

// isOpen reports whether intake is paused.
func (b *breaker) isOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}

// wait blocks while the breaker is open; it costs one atomic load while
// no failure is counted.
func (b *breaker) wait(ctx context.Context) error {
	if !b.dirty.Load() {
		return nil
	}
	for {
		b.mu.Lock()
		open, ch := b.open, b.changed
		b.mu.Unlock()
		if !open {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
