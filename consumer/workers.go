package consumer

import (
	"context"
	"sync/atomic"
	"time"
)

// nextRunLocked returns the tasks w runs next, in w.run's storage, or none
// when w starts a solo run (c.solo == w); it reports false when the
// consumer is quitting and no task is left. While the run queue is empty
// and no other worker holds the intake role, w takes it, receives, and runs
// what it received itself (see dispatchLocked), so fast handlers cost no
// hand-off between goroutines. Otherwise it takes the first waiting task
// and, while handlers are fast, up to grabMax-1 more behind it. c.mu must
// be held; it is released during intake.
func (c *Consumer) nextRunLocked(w *worker) ([]task, bool) {
	for c.runqHead == len(c.runq) {
		if c.quitting {
			return nil, false
		}
		// While another worker holds tasks it has not started, this one
		// waits instead of receiving: that worker takes the intake role
		// when done, and if its handler is slow, help gives its tasks to
		// idle workers, which must not then be waiting in Receive.
		if !c.receiving && !c.intakeOff && !c.holdingLocked() {
			if run := c.intakeTurnLocked(w); len(run) > 0 || c.solo == w {
				c.spreadLocked()
				return run, true
			}
			continue
		}
		c.idle++
		c.work.Wait()
		c.idle--
	}
	n := 1
	if !c.spreading {
		n = min(len(c.runq)-c.runqHead, grabMax)
	}
	run := append(w.run[:0], c.runq[c.runqHead:c.runqHead+n]...)
	clear(c.runq[c.runqHead : c.runqHead+n])
	c.runqHead += n
	c.dequeued += uint64(n)
	switch {
	case c.runqHead == len(c.runq):
		c.runq, c.runqHead = c.runq[:0], 0
	case c.runqHead >= 1024 && 2*c.runqHead >= len(c.runq):
		k := copy(c.runq, c.runq[c.runqHead:])
		clear(c.runq[k:])
		c.runq, c.runqHead = c.runq[:k], 0
	}
	c.spreadLocked()
	return run, true
}

// spreadLocked runs when a worker is about to start tasks. While handlers
// are slow, it wakes one idle worker for the next task, or to take the free
// intake role while this one runs; that one wakes the next in turn, so a
// batch wakes workers one by one as long as work is left for them.
// Otherwise help decides, after a delay. c.mu must be held.
func (c *Consumer) spreadLocked() {
	if c.spreading && c.spareLocked() > 0 && (c.runqHead < len(c.runq) || (!c.receiving && !c.intakeOff)) {
		c.wakeLocked()
	}
	c.armHelpLocked()
}

// wakeLocked wakes an idle worker, or starts a worker goroutine while
// fewer than Concurrency run: a consumer whose handlers keep up with fewer
// goroutines never starts the rest. c.mu must be held.
func (c *Consumer) wakeLocked() {
	switch {
	case c.idle > 0:
		c.work.Signal()
	case c.started < len(c.workers) && !c.quitting:
		c.startWorkerLocked()
	}
}

// startWorkerLocked starts the next worker's goroutine; c.mu must be held
// and a worker must be left to start.
func (c *Consumer) startWorkerLocked() {
	w := c.workers[c.started]
	c.started++
	c.goroutines.Go(func() { c.runWorker(w) })
}

// runWorker runs w's tasks. A worker runs a solo run (see runSoloLocked),
// or takes up to grabMax tasks at once while handlers are fast, runs them,
// and then, in one lock round, continues their lanes: a lane's deliveries
// run one after another on one goroutine, and a delivery costs a fraction
// of a lock round. With more than one worker, tasks a worker took but has
// not started stay claimable by help, which moves them back to the run
// queue when the worker is stuck in a slow handler, so idle workers run
// them; a single worker runs its tasks without claiming them.
func (c *Consumer) runWorker(w *worker) {
	defer w.close()
	c.mu.Lock()
	for {
		run, ok := c.nextRunLocked(w)
		if !ok {
			c.mu.Unlock()
			return
		}
		if c.solo == w {
			run = c.runSoloLocked(w)
		}
		for len(run) > 0 {
			w.setRunLocked(run)
			if len(run) > 1 && c.cfg.Concurrency > 1 {
				c.startHelpLocked() // to take back the rest if the first is slow
			}
			c.mu.Unlock()
			ran := 0
			if c.cfg.Concurrency == 1 {
				for _, t := range run {
					c.process(w, t.d)
				}
				ran = len(run)
			} else {
				for i := w.claim(); i >= 0; i = w.claim() {
					c.process(w, run[i].d)
					ran = i + 1
				}
			}
			c.ranLocking(ran)
			next := run[:0]
			for _, t := range run[:ran] {
				if t.l != nil {
					next = c.continueLaneLocked(t.l, next)
				}
			}
			clear(run[len(next):])
			run = next
		}
		w.setRunLocked(run)
	}
}

// ranLocking frees the window slots of ran deliveries a worker has run, and
// takes c.mu.
func (c *Consumer) ranLocking(ran int) {
	c.window.release(ran)
	c.mu.Lock()
	c.completed += uint64(ran)
}

// continueLaneLocked appends to next the task of l's next delivery after the
// one that just ran, or makes l idle when none waits. c.mu must be held.
func (c *Consumer) continueLaneLocked(l *lane, next []task) []task {
	if d := l.pop(); d != nil {
		return append(next, task{l: l, d: d})
	}
	c.lanes.release(l)
	return next
}

// grabMax is the most tasks a worker takes at once while handlers are fast,
// outside a solo run.
const grabMax = 16

// setRunLocked makes run the tasks w runs next, claimed in order by
// w.claim; c.mu must be held.
func (w *worker) setRunLocked(run []task) {
	w.run, w.end, w.seen = run, int32(len(run)), -1
	if len(run) > 0 {
		w.resetNext()
	}
}

// resetNext makes w's next claim start at 0. It stores only when next
// moved: a store is an atomic exchange, which costs as much as a claim, and
// a single worker, which runs its tasks without claiming them, never moves
// it. An empty run needs no reset: with end 0 nothing is claimable. w's
// own goroutine, the only one that claims, calls it, with Consumer.mu held.
func (w *worker) resetNext() {
	if w.next.Load() != 0 {
		w.next.Store(0)
	}
}

// claim returns the index in w.run of the next task w runs, or -1 when
// none is left (all run, or the rest taken back by help).
func (w *worker) claim() int {
	if i := w.next.Add(1) - 1; i < w.end {
		return int(i)
	}
	return -1
}

// holdingLocked reports whether a worker holds tasks it has not started;
// c.mu must be held.
func (c *Consumer) holdingLocked() bool {
	for _, w := range c.workers[:c.started] {
		if w.next.Load() < w.end {
			return true
		}
	}
	return false
}

// takeBackLocked moves the tasks w took but has not started to the run
// queue, when w has started none since the last call (it is running one
// slow handler), and returns how many it moved; c.mu must be held. A solo
// run that was running when help was armed, still has deliveries not
// started, and took more than soloDeliveryMax a delivery since is too slow
// for one worker, however steadily it progresses: it ends (see
// endSoloLocked).
func (c *Consumer) takeBackLocked(w *worker) int {
	i := w.next.Load()
	if i >= w.end {
		return 0
	}
	if w == c.solo {
		if c.armedSolo != c.soloRuns {
			return 0 // started since help was armed; help looks again
		}
		if time.Since(c.armedTime) <= time.Duration(i-c.armedNext)*soloDeliveryMax {
			return 0
		}
		return c.endSoloLocked()
	}
	if i != w.seen {
		w.seen = i
		return 0
	}
	if !w.next.CompareAndSwap(i, w.end) {
		return 0 // w has just started the next one
	}
	c.runq = append(c.runq, w.run[i:w.end]...)
	return int(w.end - i)
}

// worker is one worker goroutine's state, reused across its deliveries.
type worker struct {
	// The tasks w runs next, claimed in order by advancing next; help may
	// take back the unclaimed ones. run, end and seen are written under
	// Consumer.mu; w reads run and end without it while it runs them.
	run  []task
	end  int32
	next atomic.Int32
	seen int32 // next when help last looked, or -1
	// A solo run's deliveries, claimed with claimSolo; w reads them without
	// Consumer.mu. soloLanes are the lanes endSoloLocked gave the
	// deliveries of w's last claim, in order, for w to continue after
	// running them; written and read under Consumer.mu.
	solo      []Delivery
	soloLanes []*lane

	a      attempt // contexts under c.hardCtx and c.baseCtx
	leases map[context.Context]*leaseState
	// The lease state used last, checked before the map.
	lastLease context.Context
	last      *leaseState
	pruneIn   int // new leases until the full map may be pruned again
}
