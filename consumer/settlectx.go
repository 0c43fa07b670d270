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
// and cancel touch only used and timeout; the fields are guarded by mu, so an
// adapter that kept the context past its call would see a later
// settlement's state, never a data race. Contexts derived from it (which
// call Done) are cancelled as usual.
//
// Why not context.WithTimeout per settlement, the simple version: it starts
// and stops a timer per ack, and on the Kafka pipeline (BenchmarkThroughput,
// no-op handler) that cost 20–35 % of the throughput; this type stays only
// because of that measurement (docs/benchmarks-log.md, "Complexity that pays for
// itself").
type settleCtx struct {
	context.Context

	used atomic.Bool // a method was called since init: cancel must end it

	mu sync.Mutex
	// timeout is written under mu by init's goroutine, the worker reusing
	// c, which alone reads it without mu.
	timeout  time.Duration
	deadline time.Time // zero until read (see deadlineLocked)
	done     chan struct{}
	err      error
	timer    *time.Timer
}

// newSettleCtx returns a settlement context of at most d from now.
func newSettleCtx(parent context.Context, d time.Duration) *settleCtx {
	c := &settleCtx{Context: parent, timeout: d, deadline: time.Now().Add(d)}
	c.used.Store(true) // cancel must end it
	return c
}

// init readies c, reused, for a settlement of at most d from the first
// Deadline, Done or Err call. c.Context must be set. It costs an atomic
// load and a comparison when c's last use called none of its methods and d
// is unchanged.
func (c *settleCtx) init(d time.Duration) {
	if c.used.Load() || c.timeout != d {
		c.reset(d)
	}
}

func (c *settleCtx) reset(d time.Duration) {
	c.mu.Lock()
	c.timeout = d
	c.deadline = time.Time{}
	c.done, c.err, c.timer = nil, nil, nil
	c.used.Store(false)
	c.mu.Unlock()
}

// deadlineLocked returns the deadline, reading the clock the first time
// after init. c.mu must be held.
func (c *settleCtx) deadlineLocked() time.Time {
	if c.deadline.IsZero() {
		c.deadline = time.Now().Add(c.timeout)
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
	if c.used.Load() {
		c.end()
	}
}

func (c *settleCtx) end() {
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
