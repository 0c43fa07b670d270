package consumer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// settleCtx is context.WithTimeout(parent, d) for one settlement, except that
// it starts no timer until Done is called, and reads the clock only when
// asked for its deadline (or given the time the settlement started):
// settlements that never look at ctx (an in-memory ack, a batched Kafka
// offset mark) cost neither a timer nor a clock read. A lazily read deadline
// runs from the first Deadline, Done or Err call, a moment after the
// settlement started. The parent must never be cancelled (the runtime passes
// its base context).
//
// A worker reuses one settleCtx for its acks. Until a method is called, init
// and cancel touch only atomics; the other fields are guarded by mu, so an
// adapter that kept the context past its call would see a later
// settlement's state, never a data race. Contexts derived from it (which
// call Done) are cancelled as usual.
type settleCtx struct {
	context.Context

	timeout atomic.Int64 // time.Duration
	used    atomic.Bool  // a method was called since init: cancel must end it

	mu       sync.Mutex
	deadline time.Time // zero until read (see deadlineLocked)
	done     chan struct{}
	err      error
	timer    *time.Timer
}

func newSettleCtx(parent context.Context, d time.Duration) *settleCtx {
	c := &settleCtx{Context: parent}
	c.init(d, time.Now())
	return c
}

// init readies c for a settlement of at most d from start; a zero start
// reads the clock when the deadline is first needed. c.Context must be set.
func (c *settleCtx) init(d time.Duration, start time.Time) {
	if c.timeout.Load() != int64(d) {
		c.timeout.Store(int64(d)) // a load is cheaper than a store: d rarely changes
	}
	if start.IsZero() && !c.used.Load() {
		return // fields still as the last init left them: zero
	}
	c.mu.Lock()
	c.deadline = time.Time{}
	if !start.IsZero() {
		c.deadline = start.Add(d)
	}
	c.done, c.err, c.timer = nil, nil, nil
	c.used.Store(!start.IsZero())
	c.mu.Unlock()
}

// deadlineLocked returns the deadline, reading the clock the first time when
// init was given no start. c.mu must be held.
func (c *settleCtx) deadlineLocked() time.Time {
	if c.deadline.IsZero() {
		c.deadline = time.Now().Add(time.Duration(c.timeout.Load()))
	}
	return c.deadline
}

// Deadline reports the settlement deadline.
func (c *settleCtx) Deadline() (time.Time, bool) {
	c.used.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadlineLocked(), true
}

// Done returns a channel closed at the deadline or on cancel.
func (c *settleCtx) Done() <-chan struct{} {
	c.used.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		switch d := time.Until(c.deadlineLocked()); {
		case c.err != nil:
			close(c.done)
		case d <= 0:
			c.err = context.DeadlineExceeded
			close(c.done)
		default:
			done := c.done
			c.timer = time.AfterFunc(d, func() { c.expire(done) })
		}
	}
	return c.done
}

// Err reports context.DeadlineExceeded after the deadline, context.Canceled
// after cancel, else nil.
func (c *settleCtx) Err() error {
	c.used.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.deadlineLocked()) {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

// cancel ends the context and stops its timer. A context none of whose
// methods was called has nothing to end.
func (c *settleCtx) cancel() {
	if !c.used.Load() {
		return
	}
	c.mu.Lock()
	c.endLocked(context.Canceled)
	c.mu.Unlock()
}

// expire is the deadline timer's function for the settlement whose Done
// channel is done; it does nothing once c was reused.
func (c *settleCtx) expire(done chan struct{}) {
	c.mu.Lock()
	if c.done == done {
		c.endLocked(context.DeadlineExceeded)
	}
	c.mu.Unlock()
}

func (c *settleCtx) endLocked(err error) {
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
