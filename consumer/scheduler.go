package consumer

import (
	"sync"
	"time"
)

// scheduler is the runtime's scheduler. It keeps the guarantees of the
// plain one (plainScheduler) — per-lane order, at most jobs.workers items
// at once, every item run once — and adds one trick, for fast handlers:
// there is no intake goroutine. A worker that finds nothing to run takes
// the intake role, receives, and runs what it received itself, so a
// delivery whose handler takes a microsecond costs no hand-off between
// goroutines and a fraction of a lock round (on Kafka the plain
// scheduler's hand-off costs about 0.4× franz-go's own CPU per record).
// What the trick needs to stay correct when handlers are slow:
//
//   - Solo runs (solo.go): while nothing else is in flight, a worker runs
//     its whole batch in arrival order without lanes, claiming a few items
//     at a time; the run ends, giving its items lanes, as soon as another
//     worker could run an item beside it.
//   - Batched taking (workers.go): a worker takes up to grabMax tasks at
//     once and claims them one by one, so that help can take back the ones
//     it has not started.
//   - Help (help.go): a timer that notices slow handlers, spreads the run
//     queue over idle workers, takes back tasks held by a worker stuck in
//     a slow handler, and receives (prefetch) while every worker is busy.
//
// Workers start only as work finds no idle one, so a consumer whose
// handlers keep up with fewer goroutines never starts the rest.
//
// This is clever code, and it stays only while it pays: on the Kafka
// throughput benchmark against a real broker it beats the plain scheduler
// by more than 3 % (docs/benchmarks-log.md, "Complexity that pays for itself");
// elsewhere the two are equal. Should a change make that margin vanish,
// delete it and make plainScheduler the only one.
type scheduler[T any] struct {
	jobs[T]

	lanes laneTable[T] // nil slots when items have no lanes

	// Guarded by mu: the lanes' state, the run queue of tasks, the idle
	// workers waiting on work for it, and the intake role.
	mu         sync.Mutex
	runq       []task[T] // runq[runqHead:] waits for a worker
	runqHead   int
	solo       *schedWorker[T] // runs a batch without lanes (see dispatchLocked)
	soloRuns   uint64          // solo runs started; the current one's number
	work       sync.Cond
	idle       int  // workers waiting on work
	quitting   bool // set by stop: idle workers exit
	receiving  bool // a worker (or help) holds the intake role
	intakeOff  bool // intake stopped for good: no receive starts
	intakeErr  error
	intakeIdle sync.Cond     // broadcast when receiving turns false
	intakeDone chan struct{} // closed when receive returned an error

	crew       []*schedWorker[T] // made by newScheduler
	started    int               // workers whose goroutines started (see wakeLocked)
	running    sync.WaitGroup    // the started workers
	helpTimer  *time.Timer       // runs help; stopped when not armed
	helpArmed  bool
	spreading  bool      // handlers are slow: wake idle workers for tasks at once
	armedAt    uint64    // completed when help was armed
	armedUntil uint64    // dequeued once the tasks waiting when help was armed are taken
	armedSolo  uint64    // the solo run when help was armed, or 0
	armedNext  int32     // its worker's next claim then
	armedTime  time.Time // then, when armedSolo is set
	completed  uint64    // items run
	dequeued   uint64    // tasks taken from the run queue
}

func newScheduler[T any](j jobs[T]) *scheduler[T] {
	s := &scheduler[T]{jobs: j, intakeDone: make(chan struct{})}
	if j.lane != nil {
		s.lanes = newLaneTable[T](j.inFlight)
	}
	s.work.L = &s.mu
	s.intakeIdle.L = &s.mu
	s.helpTimer = time.AfterFunc(time.Hour, s.help)
	s.helpTimer.Stop()
	s.crew = make([]*schedWorker[T], j.workers)
	for i := range s.crew {
		s.crew[i] = &schedWorker[T]{id: i, tasks: make([]task[T], 0, grabMax)}
	}
	return s
}

// start starts the first worker, which takes the intake role; the rest
// start as work finds no idle worker.
func (s *scheduler[T]) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startWorkerLocked()
}

func (s *scheduler[T]) intakeStopped() <-chan struct{} { return s.intakeDone }

func (s *scheduler[T]) stopIntake() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intakeOff = true
	for s.receiving {
		s.intakeIdle.Wait()
	}
	return s.intakeErr
}

// stop makes workers exit once the run queue is empty. Workers that are
// running an item exit when it returns.
func (s *scheduler[T]) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quitting = true
	s.work.Broadcast()
	s.helpTimer.Stop()
}

func (s *scheduler[T]) wait() { s.running.Wait() }

// spareLocked returns how many workers are idle or not started yet; s.mu
// must be held.
func (s *scheduler[T]) spareLocked() int {
	return s.idle + len(s.crew) - s.started
}

// intakeTurnLocked takes the intake role for one call of receive and
// dispatches what it returned; it returns the tasks for w (see
// dispatchLocked; w is nil for prefetch). s.mu must be held, and is
// released while receiving.
func (s *scheduler[T]) intakeTurnLocked(w *schedWorker[T]) []task[T] {
	s.receiving = true
	s.mu.Unlock()
	items, err := s.receive()
	s.mu.Lock()
	own := s.dispatchLocked(items, w)
	s.endIntakeLocked(err)
	return own
}

// endIntakeLocked ends a turn of intake that returned err, which stops
// intake for good unless nil. s.mu must be held.
func (s *scheduler[T]) endIntakeLocked(err error) {
	s.receiving = false
	s.intakeIdle.Broadcast()
	if err != nil {
		if s.intakeErr == nil {
			s.intakeErr = err
		}
		if !s.intakeOff {
			s.intakeOff = true
			close(s.intakeDone)
		}
	}
}
