package consumer

import (
	"sync/atomic"
	"time"
)

// nextRunLocked returns the tasks w runs next, in w.tasks's storage, or none
// when w starts a solo run (s.solo == w); it reports false when the
// scheduler is quitting and no task is left. While the run queue is empty
// and no other worker holds the intake role, w takes it, receives, and runs
// what it received itself (see dispatchLocked), so fast handlers cost no
// hand-off between goroutines. Otherwise it takes the first waiting task
// and, while handlers are fast, up to grabMax-1 more behind it. s.mu must
// be held; it is released during intake.
func (s *scheduler[T]) nextRunLocked(w *schedWorker[T]) ([]task[T], bool) {
	for s.runqHead == len(s.runq) {
		if s.quitting {
			return nil, false
		}
		// While another worker holds tasks it has not started, this one
		// waits instead of receiving: that worker takes the intake role
		// when done, and if its handler is slow, help gives its tasks to
		// idle workers, which must not then be waiting in Receive.
		if !s.receiving && !s.intakeOff && !s.holdingLocked() {
			if run := s.intakeTurnLocked(w); len(run) > 0 || s.solo == w {
				s.spreadLocked()
				return run, true
			}
			continue
		}
		s.idle++
		s.work.Wait()
		s.idle--
	}
	n := 1
	if !s.spreading {
		n = min(len(s.runq)-s.runqHead, grabMax)
	}
	run := append(w.tasks[:0], s.runq[s.runqHead:s.runqHead+n]...)
	clear(s.runq[s.runqHead : s.runqHead+n])
	s.runqHead += n
	s.dequeued += uint64(n)
	switch {
	case s.runqHead == len(s.runq):
		s.runq, s.runqHead = s.runq[:0], 0
	case s.runqHead >= 1024 && 2*s.runqHead >= len(s.runq):
		k := copy(s.runq, s.runq[s.runqHead:])
		clear(s.runq[k:])
		s.runq, s.runqHead = s.runq[:k], 0
	}
	s.spreadLocked()
	return run, true
}

// spreadLocked runs when a worker is about to start tasks. While handlers
// are slow, it wakes one idle worker for the next task, or to take the free
// intake role while this one runs; that one wakes the next in turn, so a
// batch wakes workers one by one as long as work is left for them.
// Otherwise help decides, after a delay. s.mu must be held.
func (s *scheduler[T]) spreadLocked() {
	if s.spreading && s.spareLocked() > 0 && (s.runqHead < len(s.runq) || (!s.receiving && !s.intakeOff)) {
		s.wakeLocked()
	}
	s.armHelpLocked()
}

// wakeLocked wakes an idle worker, or starts a worker goroutine while
// fewer than Concurrency run: a consumer whose handlers keep up with fewer
// goroutines never starts the rest. s.mu must be held.
func (s *scheduler[T]) wakeLocked() {
	switch {
	case s.idle > 0:
		s.work.Signal()
	case s.started < len(s.crew) && !s.quitting:
		s.startWorkerLocked()
	}
}

// startWorkerLocked starts the next worker's goroutine; s.mu must be held
// and a worker must be left to start.
func (s *scheduler[T]) startWorkerLocked() {
	w := s.crew[s.started]
	s.started++
	s.running.Go(func() { s.runWorker(w) })
}

// runWorker runs w's tasks. A worker runs a solo run (see runSoloLocked),
// or takes up to grabMax tasks at once while handlers are fast, runs them,
// and then, in one lock round, continues their lanes: a lane's items run
// one after another on one goroutine, and an item costs a fraction of a
// lock round. With more than one worker, tasks a worker took but has
// not started stay claimable by help, which moves them back to the run
// queue when the worker is stuck in a slow handler, so idle workers run
// them; a single worker runs its tasks without claiming them.
func (s *scheduler[T]) runWorker(w *schedWorker[T]) {
	s.mu.Lock()
	for {
		run, ok := s.nextRunLocked(w)
		if !ok {
			s.mu.Unlock()
			return
		}
		if s.solo == w {
			run = s.runSoloLocked(w)
		}
		for len(run) > 0 {
			w.setTasksLocked(run)
			if len(run) > 1 && s.workers > 1 {
				s.startHelpLocked() // to take back the rest if the first is slow
			}
			s.mu.Unlock()
			ran := 0
			if s.workers == 1 { // one worker runs its tasks in order, unclaimed
				for _, t := range run {
					s.run(w.id, t.d)
				}
				ran = len(run)
			} else {
				for i := w.claim(); i >= 0; i = w.claim() {
					s.run(w.id, run[i].d)
					ran = i + 1
				}
			}
			s.ranLocking(ran)
			next := run[:0]
			for _, t := range run[:ran] {
				if t.l != nil {
					next = s.continueLaneLocked(t.l, next)
				}
			}
			clear(run[len(next):])
			run = next
		}
		w.setTasksLocked(run)
	}
}

// ranLocking reports ran items a worker has run (see jobs.ran), and takes
// s.mu.
func (s *scheduler[T]) ranLocking(ran int) {
	s.ran(ran)
	s.mu.Lock()
	s.completed += uint64(ran)
}

// continueLaneLocked appends to next the task of l's next item after the
// one that just ran, or makes l idle when none waits. s.mu must be held.
func (s *scheduler[T]) continueLaneLocked(l *lane[T], next []task[T]) []task[T] {
	if d, ok := l.pop(); ok {
		return append(next, task[T]{l: l, d: d})
	}
	s.lanes.release(l)
	return next
}

// grabMax is the most tasks a worker takes at once while handlers are fast,
// outside a solo run.
const grabMax = 16

// setTasksLocked makes run the tasks w runs next, claimed in order by
// w.claim; s.mu must be held.
func (w *schedWorker[T]) setTasksLocked(run []task[T]) {
	w.tasks, w.end, w.seen = run, int32(len(run)), -1
	if len(run) > 0 {
		w.resetNext()
	}
}

// resetNext makes w's next claim start at 0. It stores only when next
// moved: a store is an atomic exchange, which costs as much as a claim, and
// a single worker, which runs its tasks without claiming them, never moves
// it. An empty run needs no reset: with end 0 nothing is claimable. w's
// own goroutine, the only one that claims, calls it, with scheduler.mu held.
func (w *schedWorker[T]) resetNext() {
	if w.next.Load() != 0 {
		w.next.Store(0)
	}
}

// claim returns the index in w.tasks of the next task w runs, or -1 when
// none is left (all run, or the rest taken back by help).
func (w *schedWorker[T]) claim() int {
	if i := w.next.Add(1) - 1; i < w.end {
		return int(i)
	}
	return -1
}

// holdingLocked reports whether a worker holds tasks it has not started;
// s.mu must be held.
func (s *scheduler[T]) holdingLocked() bool {
	for _, w := range s.crew[:s.started] {
		if w.next.Load() < w.end {
			return true
		}
	}
	return false
}

// takeBackLocked moves the tasks w took but has not started to the run
// queue, when w has started none since the last call (it is running one
// slow handler), and returns how many it moved; s.mu must be held. A solo
// run that was running when help was armed, still has items not
// started, and took more than soloDeliveryMax an item since is too slow
// for one worker, however steadily it progresses: it ends (see
// endSoloLocked).
func (s *scheduler[T]) takeBackLocked(w *schedWorker[T]) int {
	i := w.next.Load()
	if i >= w.end {
		return 0
	}
	if w == s.solo {
		if s.armedSolo != s.soloRuns {
			return 0 // started since help was armed; help looks again
		}
		if time.Since(s.armedTime) <= time.Duration(i-s.armedNext)*soloDeliveryMax {
			return 0
		}
		return s.endSoloLocked()
	}
	if i != w.seen {
		w.seen = i
		return 0
	}
	if !w.next.CompareAndSwap(i, w.end) {
		return 0 // w has just started the next one
	}
	s.runq = append(s.runq, w.tasks[i:w.end]...)
	return int(w.end - i)
}

// schedWorker is one worker goroutine's state, reused across its items.
type schedWorker[T any] struct {
	id int // the worker's number, for jobs.run
	// The tasks w runs next, claimed in order by advancing next; help may
	// take back the unclaimed ones. tasks, end and seen are written under
	// scheduler.mu; w reads tasks and end without it while it runs them.
	tasks []task[T]
	end   int32
	next  atomic.Int32
	seen  int32 // next when help last looked, or -1
	// A solo run's items, claimed with claimSolo; w reads them without
	// scheduler.mu. soloLanes are the lanes endSoloLocked gave the items
	// of w's last claim, in order, for w to continue after running them;
	// written and read under scheduler.mu.
	solo      []T
	soloLanes []*lane[T]
}
