package consumer

import (
	"context"
	"sync"
	"time"
)

// settleCtx is context.WithTimeout(parent, d) for one settlement, except that
// it starts no timer until Done is called: settlements that never wait on
// ctx.Done (an in-memory ack, a batched Kafka offset mark) cost no timer. The
// parent must never be cancelled (the runtime passes its base context).
type settleCtx struct {
	context.Context
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{}
	err   error
	timer *time.Timer
}

func newSettleCtx(parent context.Context, d time.Duration) *settleCtx {
	c := new(settleCtx)
	c.init(parent, d)
	return c
}

// init sets up a zero settleCtx.
func (c *settleCtx) init(parent context.Context, d time.Duration) {
	c.Context, c.deadline = parent, time.Now().Add(d)
}

// Deadline reports the settlement deadline.
func (c *settleCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done returns a channel closed at the deadline or on cancel.
func (c *settleCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		switch d := time.Until(c.deadline); {
		case c.err != nil:
			close(c.done)
		case d <= 0:
			c.err = context.DeadlineExceeded
			close(c.done)
		default:
			c.timer = time.AfterFunc(d, func() { c.end(context.DeadlineExceeded) })
		}
	}
	return c.done
}

// Err reports context.DeadlineExceeded after the deadline, context.Canceled
// after cancel, else nil.
func (c *settleCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err == nil && !time.Now().Before(c.deadline) {
		c.end(context.DeadlineExceeded)
		c.mu.Lock()
		err = c.err
		c.mu.Unlock()
	}
	return err
}

// cancel ends the context and stops its timer.
func (c *settleCtx) cancel() { c.end(context.Canceled) }

func (c *settleCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}
