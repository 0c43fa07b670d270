package consumer

import (
	"context"
	"errors"
)

// intake is one turn of intake, the scheduler's jobs.receive: it waits
// while the breaker is open and for room in the window, and receives. It
// returns the deliveries to schedule, whose window slots are taken (each
// freed once the delivery has run: jobs.ran). Deliveries a source returned
// beyond what was asked are returned on later turns, as room frees. The
// scheduler calls it on no lane, so every delivery in flight is on a lane
// a worker runs, and waiting for room cannot deadlock. intake returns an
// error only when intake must stop for good.
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
