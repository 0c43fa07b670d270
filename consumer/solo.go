package consumer

import (
	"time"
)

// endSoloLocked ends the solo run before another worker may run a delivery
// beside it, giving its deliveries in flight what dispatch would have: the
// ones of its worker's last claim, which the worker runs (or has just run),
// hold their lanes, which the worker continues as usual once it has run
// them all; the ones it has not claimed are taken back, their lanes in
// arrival order (queued behind a busy one, or as tasks in the run queue).
// It returns how many were taken back. c.mu must be held.
func (c *Consumer) endSoloLocked() int {
	w := c.solo
	c.solo = nil
	i := w.next.Load()
	for i < w.end && !w.next.CompareAndSwap(i, w.end) {
		i = w.next.Load()
	}
	claimed := min(i, w.end)
	// No lane was busy before: a lane found busy here is held by an
	// earlier delivery of the same claim, which w runs first.
	for _, d := range w.solo[min(soloClaimStart(i), claimed):claimed] {
		l, _ := c.laneOf(d.Message())
		if l == nil {
			continue
		}
		l.held++
		w.soloLanes = append(w.soloLanes, l)
	}
	for _, d := range w.solo[claimed:w.end] {
		if t, ok := c.placeLocked(d); ok {
			c.runq = append(c.runq, t)
		}
	}
	return int(w.end - claimed)
}

// soloClaimMax is the most deliveries a solo run's worker claims at once.
// Claims start at one delivery and double with each claim, so a solo run
// whose first deliveries are slow is taken back (see takeBackLocked) a
// delivery at a time, while a fast one costs an atomic add per 8
// deliveries instead of one per delivery (an atomic add costs more than a
// fast delivery's own runtime work). The price: a delivery that turns slow
// in a fast solo run keeps up to soloClaimMax-1 deliveries claimed behind
// it on its worker.
const soloClaimMax = 8

// soloClaimSize is the size of the solo run's claim that starts at index
// from: 1, 2, 4, then soloClaimMax, so claims end at 1, 3, 7, 15, 23, ...
func soloClaimSize(from int32) int32 { return min(from+1, soloClaimMax) }

// soloClaimStart returns where the solo run's claim that ends at index end
// (a claim boundary) starts.
func soloClaimStart(end int32) int32 {
	if end < 2*soloClaimMax {
		return max(end-1, 0) / 2
	}
	return end - soloClaimMax
}

// claimSolo claims the deliveries of w's solo run that follow index from
// (the end of w's last claim, or 0) and returns them as [from, to); from ==
// to when none is left (all claimed, or the rest taken back by
// endSoloLocked).
func (w *worker) claimSolo(from int32) (int32, int32) {
	size := soloClaimSize(from)
	if i := w.next.Add(size) - size; i < w.end {
		return i, min(i+size, w.end)
	}
	return from, from
}

// helpDelay is how long tasks may wait in the run queue while idle workers
// exist before help wakes them: handlers that drain the queue sooner cost no
// goroutine wake-ups, which on a busy consumer cost more than the handlers.
// A sub-millisecond timer may fire up to a millisecond late when the
// process is otherwise idle.
const helpDelay = 100 * time.Microsecond

// soloDeliveryMax is the longest a solo run's deliveries may take, on
// average, before its remaining ones are spread over idle workers: handing
// a delivery to another worker costs a few microseconds.
const soloDeliveryMax = 10 * time.Microsecond

// prefetchDelay is how long every worker must have been busy, with none
// idle, before intake runs beside them to fill the window.
const prefetchDelay = time.Millisecond

// armHelpLocked schedules help when a worker is about to run a task and
// other work is left for another goroutine: tasks in the run queue, or the
// free intake role. c.mu must be held. The run queue may hold tasks while no
// worker is idle: when every worker is blocked in a handler they wait there
// too, and only prefetch can fill the rest of the window.
func (c *Consumer) armHelpLocked() {
	if c.runqHead == len(c.runq) && (c.receiving || c.intakeOff) {
		return
	}
	c.startHelpLocked()
}

// startHelpLocked arms the help timer unless it is armed; c.mu must be
// held.
func (c *Consumer) startHelpLocked() {
	if c.helpArmed || c.quitting {
		return
	}
	delay := helpDelay
	if c.spareLocked() == 0 {
		delay = prefetchDelay
	}
	c.helpArmed, c.armedAt = true, c.completed
	c.armedSolo = 0
	if c.solo != nil {
		c.armedSolo, c.armedNext, c.armedTime = c.soloRuns, c.solo.next.Load(), time.Now()
	}
	c.armedUntil = c.dequeued + uint64(len(c.runq)-c.runqHead)
	c.helpTimer.Reset(delay)
}

// help runs a while after armHelpLocked. When the tasks that were waiting
// then are still not all taken, handlers are slow: the workers spread the
// run queue among themselves at once (each woken worker wakes the next)
// until help finds them fast again. It takes back the tasks a worker stuck
// in a slow handler took but has not started. It wakes an idle worker for
// tasks in the run queue, or else for the free intake role while no worker
// holds unstarted tasks. With no worker idle, help prefetches: it takes the intake
// role from the timer's goroutine and receives while no delivery completes,
// until a worker is idle (which then takes the role itself) or the window
// is full. When deliveries complete meanwhile, handlers are fast: a worker
// soon finds the run queue empty and receives itself, on its own goroutine,
// and prefetch at most refills an empty run queue.
func (c *Consumer) help() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.helpArmed = false
	c.spreading = c.dequeued < c.armedUntil
	// A worker that took several tasks and has started none of the rest
	// since the last look is in a slow handler: the rest go back to the run
	// queue, for idle workers. Look again later while any worker holds
	// tasks it has not started.
	movedBack, pending := 0, false
	if c.cfg.Concurrency > 1 {
		for _, w := range c.workers[:c.started] {
			if n := c.takeBackLocked(w); n > 0 {
				movedBack += n
			} else if w.next.Load() < w.end {
				pending = true
			}
		}
		if pending {
			c.startHelpLocked()
		}
	}
	for c.spareLocked() == 0 && !c.receiving && !c.intakeOff && !c.quitting && c.window.room() &&
		(c.runqHead == len(c.runq) || c.completed == c.armedAt) {
		c.intakeTurnLocked(nil)
	}
	if movedBack > 0 {
		c.spreading = true
	}
	switch {
	case c.spareLocked() == 0:
	case c.runqHead < len(c.runq):
		// Tasks have waited helpDelay, or were dispatched here: an idle
		// worker takes them (and, while spreading, wakes the next).
		c.wakeLocked()
	case !c.receiving && !c.intakeOff && !pending:
		// To take the intake role; not while a worker holds tasks it has
		// not started, which the woken worker could wait in Receive beside.
		c.wakeLocked()
	}
}

// runSoloLocked runs w's solo run, claiming its deliveries a few at a time
// (see soloClaimMax), and returns the tasks that continue the lanes
// endSoloLocked gave the deliveries of w's last claim, if it ended the run.
// c.mu must be held; it is released while the deliveries run.
func (c *Consumer) runSoloLocked(w *worker) []task {
	ds := w.solo
	c.mu.Unlock()
	var ran int32
	for from, to := w.claimSolo(0); from < to; from, to = w.claimSolo(to) {
		for _, d := range ds[from:to] {
			c.process(w, d)
		}
		ran = to
	}
	c.ranLocking(int(ran))
	if c.solo == w {
		c.solo = nil
	}
	w.solo, w.end = nil, 0
	run := w.run[:0]
	for _, l := range w.soloLanes {
		if l.held--; l.held == 0 {
			run = c.continueLaneLocked(l, run)
		}
	}
	clear(w.soloLanes)
	w.soloLanes = w.soloLanes[:0]
	return run
}
