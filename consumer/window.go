package consumer

import (
	"context"
	"sync/atomic"
)

// window bounds the deliveries in flight (received, not yet settled). Intake
// takes room in batches: once it has filled the window it waits until refill
// slots are free again, so a busy consumer calls Source.Receive with large
// batches instead of once per settled delivery, and the intake goroutine is
// woken once per batch rather than once per message. Until the window is
// full, any free slot is taken (a source that trickles still fills it).
// Releasing a slot is one atomic add unless intake waits.
type window struct {
	size   int64
	refill int64
	used   atomic.Int64
	need   atomic.Int64  // free slots the waiter needs; 0 when none waits
	wake   chan struct{} // capacity 1
	full   bool          // intake's last take filled the window (intake only)
	// onWait, when set, is called each time intake starts waiting for
	// room, after waiting reports true (the batch scheduler's wake).
	onWait func()
}

// newWindow returns a window of size slots. refill is clamped so that intake
// never waits while a worker could be idle: it waits only while more than
// size-refill >= workers deliveries are in flight. (With a BatchHandler, a
// worker could still idle beside a batch that lingers for more: the batch
// scheduler starts it once intake waits, see waiting and onWait.)
func newWindow(size, batch, workers int) *window {
	refill := max(1, min(batch, size/2, size-workers))
	return &window{size: int64(size), refill: int64(refill), wake: make(chan struct{}, 1)}
}

// acquire takes up to most free slots and returns how many it took. It waits
// for one free slot, or for refill free slots after a take that filled the
// window.
func (w *window) acquire(ctx context.Context, most int) (int, error) {
	least := int64(1)
	if w.full {
		least = w.refill
	}
	n, err := w.acquireN(ctx, least, int64(most))
	if err == nil {
		w.full = w.used.Load() >= w.size
	}
	return n, err
}

// acquireN waits until at least least slots are free and takes up to most.
// Only one goroutine (intake) may wait at a time.
func (w *window) acquireN(ctx context.Context, least, most int64) (int, error) {
	for {
		if n, ok := w.tryTake(least, most); ok {
			return n, nil
		}
		w.need.Store(least)
		// A release between tryTake and Store saw need == 0: look again.
		if n, ok := w.tryTake(least, most); ok {
			w.need.Store(0)
			return n, nil
		}
		if w.onWait != nil {
			w.onWait()
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			w.need.Store(0)
			return 0, ctx.Err()
		}
	}
}

// waiting reports whether intake waits for room: nothing more is received
// until slots are freed. It is false while a Receive is under way on slots
// intake took: what that returns fills them.
func (w *window) waiting() bool { return w.need.Load() > 0 }

func (w *window) tryTake(least, most int64) (int, bool) {
	for {
		u := w.used.Load()
		free := w.size - u
		if free < least {
			return 0, false
		}
		n := min(free, most)
		if w.used.CompareAndSwap(u, u+n) {
			return int(n), true
		}
	}
}

// room reports whether a slot is free.
// waitIdle waits until no slot is taken and reports true, or reports false
// when ctx is done first. Like acquire, it must not run beside another
// waiter: the runtime calls it to drain, once intake has stopped.
func (w *window) waitIdle(ctx context.Context) bool {
	for !w.idle() {
		w.need.Store(w.size)
		if w.used.Load() == 0 {
			w.need.Store(0)
			break
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			w.need.Store(0)
			return false
		}
	}
	return true
}

// idle reports whether no slot is taken.
func (w *window) idle() bool { return w.used.Load() == 0 }

func (w *window) room() bool { return w.used.Load() < w.size }

// hold takes one more slot for a delivery that already holds one and is
// about to release it while it stays in flight (a copy settling off its
// worker, see Consumer.copyOffWorker); release(1) frees it. It never
// waits: the slot it takes is the one the delivery's release frees.
func (w *window) hold() { w.used.Add(1) }

// giveBack returns n slots intake took but did not use (Receive returned
// fewer deliveries than asked): the window is not full after all.
func (w *window) giveBack(n int) {
	if n > 0 {
		w.full = false
		w.release(n)
	}
}

// release frees n slots and wakes intake once enough are free.
func (w *window) release(n int) {
	u := w.used.Add(-int64(n))
	if need := w.need.Load(); need > 0 && w.size-u >= need && w.need.CompareAndSwap(need, 0) {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}
