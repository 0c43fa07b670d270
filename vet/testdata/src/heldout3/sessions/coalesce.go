package sessions

import (
	"context"
	"errors"
	"sync"
)

// coalescer collects writes and runs them together on Flush, so a chatty
// client produces one write per interval instead of one per event.
type coalescer struct {
	mu      sync.Mutex
	pending []func(context.Context) error
}

// Add queues fn for the next Flush.
func (c *coalescer) Add(fn func(context.Context) error) {
	c.mu.Lock()
	c.pending = append(c.pending, fn)
	c.mu.Unlock()
}

// Flush runs the queued writes and forgets them.
func (c *coalescer) Flush(ctx context.Context) error {
	c.mu.Lock()
	fns := c.pending
	c.pending = nil
	c.mu.Unlock()
	var errs []error
	for _, fn := range fns {
		errs = append(errs, fn(ctx))
	}
	return errors.Join(errs...)
}
