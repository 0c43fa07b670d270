package consumer

import (
	"context"
	"errors"
)

// intake is one turn of the intake role, which a worker takes when the run
// queue is empty: it waits while the breaker is open and for room in the
// window, and receives. It returns the deliveries to dispatch, whose window
// slots are taken. Deliveries a source returned beyond what was asked are
// returned on later turns, as room frees. The role's holder runs no lane, so
// every delivery in flight is on a lane another worker runs, and waiting for
// room cannot deadlock. intake returns an error only when intake must stop
// for good.
func (c *Consumer) intake(ctx context.Context) ([]Delivery, error) {
	if err := c.breaker.wait(ctx); err != nil {
		return nil, err
	}
	if len(c.excess) > 0 {
		// The source returned more than asked (an adapter bug): wait for
		// room so in-flight stays bounded.
		n, err := c.window.acquireN(ctx, 1, int64(len(c.excess)))
		if err != nil {
			return nil, err // unsettled; the source redelivers them after Close
		}
		ds := c.excess[:n:n]
		if c.excess = c.excess[n:]; len(c.excess) == 0 {
			c.excess = nil
		}
		return ds, nil
	}
	n, err := c.window.acquire(ctx, c.cfg.ReceiveBatch)
	if err != nil {
		return nil, err
	}
	ds, err := c.src.Receive(ctx, n)
	c.window.giveBack(n - len(ds))
	if len(ds) > n {
		c.excess = append(c.excess, ds[n:]...)
		ds = ds[:n]
	}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrSourceClosed) {
			return ds, err
		}
		c.failures++
		d := outageDelay(c.cfg.OutageBackoff, c.failures)
		c.log.Error("receive failed; retrying", "error", err, "in", d.String())
		if !sleep(ctx, d) {
			return ds, ctx.Err()
		}
		return ds, nil
	}
	c.failures = 0
	// The breaker may have opened while Receive waited: hold what it
	// returned until it closes, so no batch passes an open breaker.
	if err := c.breaker.wait(ctx); err != nil {
		return ds, err
	}
	return ds, nil
}

// spareLocked returns how many workers are idle or not started yet; c.mu
// must be held.
func (c *Consumer) spareLocked() int {
	return c.idle + len(c.workers) - c.started
}

// intakeTurnLocked takes the intake role for one turn of intake and
// dispatches what it received; it returns the tasks for w (see
// dispatchLocked; w is nil for prefetch). c.mu must be held, and is
// released while receiving.
func (c *Consumer) intakeTurnLocked(w *worker) []task {
	c.receiving = true
	c.mu.Unlock()
	ds, err := c.intake(c.intakeCtx)
	c.mu.Lock()
	own := c.dispatchLocked(ds, w)
	c.endIntakeLocked(err)
	return own
}

// endIntakeLocked ends a turn of intake that returned err, which stops
// intake for good unless nil. c.mu must be held.
func (c *Consumer) endIntakeLocked(err error) {
	c.receiving = false
	c.intakeIdle.Broadcast()
	if err != nil {
		if c.intakeErr == nil {
			c.intakeErr = err
		}
		if !c.intakeOff {
			c.intakeOff = true
			close(c.intakeDone)
		}
	}
}
