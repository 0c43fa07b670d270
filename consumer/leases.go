package consumer

import (
	"context"
	"sync/atomic"
)

// leaseState is a worker's attempt state for the deliveries of one lease:
// its handler context is cancelled when the lease ends or on hard stop.
type leaseState struct {
	a attempt
	// lost is set when the lease ends: at once for a lease done when the
	// state is made, else by the lease's AfterFunc (a moment after it
	// ends, as if it ended then), before it cancels the handler context.
	// An atomic load, where the lease context's Err is an interface call.
	lost atomic.Bool
	stop func() bool // unhooks the lost hook from the lease
	end  context.CancelFunc
}

// maxLeases bounds a worker's cached lease states; done ones are pruned
// when it is reached.
const maxLeases = 256

// leaseAttempt returns w's state for deliveries leased by lease, creating
// it on first use. When w's cache is full of live leases, the state is not
// cached and returned as owned: the caller releases it.
func (w *worker) leaseAttempt(c *Consumer, lease context.Context) (*leaseState, bool) {
	if w.last != nil && w.lastLease == lease {
		return w.last, false // deliveries of one lease come in runs
	}
	if ls := w.leases[lease]; ls != nil {
		w.lastLease, w.last = lease, ls
		return ls, false
	}
	if w.leases == nil {
		w.leases = make(map[context.Context]*leaseState)
	}
	if w.pruneIn--; len(w.leases) >= maxLeases && w.pruneIn <= 0 {
		// Pruned at most once per maxLeases new leases, so an adapter with
		// a live lease per delivery costs no scan per delivery.
		w.pruneIn = maxLeases
		w.lastLease, w.last = nil, nil
		for k, ls := range w.leases {
			if k.Err() != nil {
				ls.release()
				delete(w.leases, k)
			}
		}
	}
	return w.newLeaseState(c, lease)
}

// newLeaseState makes the state for lease: cached (see leaseAttempt), or
// owned when the cache is full.
func (w *worker) newLeaseState(c *Consumer, lease context.Context) (*leaseState, bool) {
	hctx, cancel := context.WithCancel(c.hardCtx)
	ls := &leaseState{end: cancel}
	ls.stop = context.AfterFunc(lease, func() {
		ls.lost.Store(true)
		cancel()
	})
	if lease.Err() != nil {
		ls.lost.Store(true)
	}
	ls.a.actx.Context, ls.a.actx.ident, ls.a.sctx.Context = hctx, &c.ident, c.baseCtx
	if len(w.leases) >= maxLeases {
		return ls, true
	}
	w.leases[lease] = ls
	w.lastLease, w.last = lease, ls
	return ls, false
}

func (ls *leaseState) release() {
	ls.stop()
	ls.end()
}

// close releases w's lease states.
func (w *worker) close() {
	for _, ls := range w.leases {
		ls.release()
	}
	clear(w.leases)
}

// leaseLost reports whether d is Leased and its lease is gone.
func leaseLost(d Delivery) bool {
	l, ok := d.(Leased)
	return ok && isClosed(l.Lost())
}

// isClosed reports whether ch is closed (or has a value ready).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
