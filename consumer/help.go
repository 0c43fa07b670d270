package consumer

import "time"

// helpDelay is how long tasks may wait in the run queue while idle workers
// exist before help wakes them: handlers that drain the queue sooner cost no
// goroutine wake-ups, which on a busy consumer cost more than the handlers.
// A sub-millisecond timer may fire up to a millisecond late when the
// process is otherwise idle.
const helpDelay = 100 * time.Microsecond

// soloDeliveryMax is the longest a solo run's items may take, on
// average, before its remaining ones are spread over idle workers: handing
// an item to another worker costs a few microseconds.
const soloDeliveryMax = 10 * time.Microsecond

// prefetchDelay is how long every worker must have been busy, with none
// idle, before intake runs beside them to fill the window.
const prefetchDelay = time.Millisecond

// armHelpLocked schedules help when a worker is about to run a task and
// other work is left for another goroutine: tasks in the run queue, or the
// free intake role. s.mu must be held. The run queue may hold tasks while no
// worker is idle: when every worker is blocked in a handler they wait there
// too, and only prefetch can fill the rest of the window.
func (s *scheduler[T]) armHelpLocked() {
	if s.runqHead == len(s.runq) && (s.receiving || s.intakeOff) {
		return
	}
	s.startHelpLocked()
}

// startHelpLocked arms the help timer unless it is armed; s.mu must be
// held.
func (s *scheduler[T]) startHelpLocked() {
	if s.helpArmed || s.quitting {
		return
	}
	delay := helpDelay
	if s.spareLocked() == 0 {
		delay = prefetchDelay
	}
	s.helpArmed, s.armedAt = true, s.completed
	s.armedSolo = 0
	if s.solo != nil {
		s.armedSolo, s.armedNext, s.armedTime = s.soloRuns, s.solo.next.Load(), time.Now()
	}
	s.armedUntil = s.dequeued + uint64(len(s.runq)-s.runqHead)
	s.helpTimer.Reset(delay)
}

// help runs a while after armHelpLocked. When the tasks that were waiting
// then are still not all taken, handlers are slow: the workers spread the
// run queue among themselves at once (each woken worker wakes the next)
// until help finds them fast again. It takes back the tasks a worker stuck
// in a slow handler took but has not started. It wakes an idle worker for
// tasks in the run queue, or else for the free intake role while no worker
// holds unstarted tasks. With no worker idle, help prefetches: it takes the intake
// role from the timer's goroutine and receives while no item completes,
// until a worker is idle (which then takes the role itself) or receive would
// wait for room. When items complete meanwhile, handlers are fast: a worker
// soon finds the run queue empty and receives itself, on its own goroutine,
// and prefetch at most refills an empty run queue.
func (s *scheduler[T]) help() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.helpArmed = false
	s.spreading = s.dequeued < s.armedUntil
	// A worker that took several tasks and has started none of the rest
	// since the last look is in a slow handler: the rest go back to the run
	// queue, for idle workers. Look again later while any worker holds
	// tasks it has not started.
	movedBack, pending := 0, false
	if s.workers > 1 {
		for _, w := range s.crew[:s.started] {
			if n := s.takeBackLocked(w); n > 0 {
				movedBack += n
			} else if w.next.Load() < w.end {
				pending = true
			}
		}
		if pending {
			s.startHelpLocked()
		}
	}
	for s.spareLocked() == 0 && !s.receiving && !s.intakeOff && !s.quitting && s.room() &&
		(s.runqHead == len(s.runq) || s.completed == s.armedAt) {
		s.intakeTurnLocked(nil)
	}
	if movedBack > 0 {
		s.spreading = true
	}
	switch {
	case s.spareLocked() == 0:
	case s.runqHead < len(s.runq):
		// Tasks have waited helpDelay, or were dispatched here: an idle
		// worker takes them (and, while spreading, wakes the next).
		s.wakeLocked()
	case !s.receiving && !s.intakeOff && !pending:
		// To take the intake role; not while a worker holds tasks it has
		// not started, which the woken worker could wait in Receive beside.
		s.wakeLocked()
	}
}
