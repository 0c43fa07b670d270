package consumer

import (
	"sync"
	"time"
)

// batchScheduler runs items in batches, for a Consumer of a BatchHandler.
// One intake goroutine receives; one former goroutine cuts batches from
// what was received and starts a goroutine per batch, at most jobs.workers
// at once.
//
// The former scans the items received and not yet batched in arrival order
// and takes each whose lane no running batch holds, up to size items; a lane
// with items in a running batch is busy until that batch has run, so its
// later items wait, and two running batches never share a lane. A batch's
// items keep their arrival order, so each lane's items do too. A batch that
// is not full waits until maxWait after its oldest item arrived, unless
// intake waits for room in the window (nothing more can arrive until a batch
// runs: the window is full, or intake, having filled it, waits for a refill
// of free slots) or intake has stopped. Intake that holds slots for a
// Receive under way has room: what it returns may fill the batch.
type batchScheduler[T any] struct {
	jobs     jobs[T]
	size     int
	maxWait  time.Duration
	runBatch func(worker int, items []T)

	kick chan struct{} // capacity 1: the former should look again

	mu      sync.Mutex
	pending []arrival[T]         // received, not in a batch, in arrival order
	busy    map[laneKey]struct{} // the lanes of the running batches
	idle    []int                // the numbers of the workers without a batch
	quit    bool                 // set by stop: the former exits once nothing is pending

	intakeOff   bool // set by stopIntake: receive is called no more
	intakeErr   error
	intakeDone  chan struct{} // closed when receive returned an error
	intakeEnded chan struct{} // closed when the intake goroutine returns
	formerDone  chan struct{} // closed when the former returns
	running     sync.WaitGroup
}

// arrival is a received item and when it arrived.
type arrival[T any] struct {
	item T
	at   time.Time
}

func newBatchScheduler[T any](j jobs[T], size int, maxWait time.Duration, run func(worker int, items []T)) *batchScheduler[T] {
	s := &batchScheduler[T]{
		jobs:        j,
		size:        size,
		maxWait:     maxWait,
		runBatch:    run,
		kick:        make(chan struct{}, 1),
		busy:        make(map[laneKey]struct{}),
		intakeDone:  make(chan struct{}),
		intakeEnded: make(chan struct{}),
		formerDone:  make(chan struct{}),
	}
	for w := j.workers - 1; w >= 0; w-- {
		s.idle = append(s.idle, w)
	}
	return s
}

func (s *batchScheduler[T]) start() {
	go s.form()
	go s.intake()
}

func (s *batchScheduler[T]) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// intake receives until receive fails or stopIntake.
func (s *batchScheduler[T]) intake() {
	defer close(s.intakeEnded)
	for {
		items, err := s.jobs.receive()
		s.mu.Lock()
		if len(items) > 0 {
			at := time.Now()
			for _, it := range items {
				s.pending = append(s.pending, arrival[T]{it, at})
			}
		}
		off := s.intakeOff
		if err != nil {
			s.intakeErr, s.intakeOff = err, true
			if !off {
				close(s.intakeDone)
			}
		}
		s.mu.Unlock()
		s.wake()
		if off || err != nil {
			return
		}
	}
}

func (s *batchScheduler[T]) intakeStopped() <-chan struct{} { return s.intakeDone }

func (s *batchScheduler[T]) stopIntake() error {
	s.mu.Lock()
	s.intakeOff = true
	s.mu.Unlock()
	s.wake() // a partial batch need not wait for more
	<-s.intakeEnded
	return s.intakeErr
}

// form cuts batches and starts them while workers are idle, until stop
// and nothing is pending.
func (s *batchScheduler[T]) form() {
	defer close(s.formerDone)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		s.mu.Lock()
		var due time.Time
		for len(s.idle) > 0 {
			batch, wait := s.cut(time.Now())
			if batch == nil {
				due = wait
				break
			}
			w := s.idle[len(s.idle)-1]
			s.idle = s.idle[:len(s.idle)-1]
			s.running.Add(1)
			go s.run(w, batch)
		}
		exit := s.quit && len(s.pending) == 0
		s.mu.Unlock()
		if exit {
			return
		}
		if !due.IsZero() {
			linger.Reset(time.Until(due))
		}
		select {
		case <-s.kick:
		case <-linger.C:
		}
		linger.Stop()
	}
}

// cut takes the next batch from pending, or returns nil and, when a batch
// that is not full lingers, the time it is due. s.mu must be held.
func (s *batchScheduler[T]) cut(now time.Time) ([]T, time.Time) {
	var take []int
	var oldest time.Time
	for i := range s.pending {
		k := s.jobs.laneOf(s.pending[i].item)
		if k.kind != laneNone {
			if _, held := s.busy[k]; held {
				continue
			}
		}
		if take == nil {
			oldest = s.pending[i].at
		}
		take = append(take, i)
		if len(take) == s.size {
			break
		}
	}
	if len(take) == 0 {
		return nil, time.Time{}
	}
	if due := oldest.Add(s.maxWait); len(take) < s.size && !s.intakeOff && !s.quit && !s.jobs.waitsForRoom() && now.Before(due) {
		return nil, due
	}
	batch := make([]T, len(take))
	kept, t := 0, 0
	for i := range s.pending {
		if t < len(take) && take[t] == i {
			batch[t] = s.pending[i].item
			if k := s.jobs.laneOf(batch[t]); k.kind != laneNone {
				s.busy[k] = struct{}{}
			}
			t++
			continue
		}
		s.pending[kept] = s.pending[i]
		kept++
	}
	clear(s.pending[kept:])
	s.pending = s.pending[:kept]
	return batch, time.Time{}
}

// run runs batch on worker w, then frees its lanes and w.
func (s *batchScheduler[T]) run(w int, batch []T) {
	defer s.running.Done()
	s.runBatch(w, batch)
	s.jobs.ran(len(batch))
	s.mu.Lock()
	for _, it := range batch {
		if k := s.jobs.laneOf(it); k.kind != laneNone {
			delete(s.busy, k)
		}
	}
	s.idle = append(s.idle, w)
	s.mu.Unlock()
	s.wake()
}

func (s *batchScheduler[T]) stop() {
	s.mu.Lock()
	s.quit = true
	s.mu.Unlock()
	s.wake()
}

// wait waits for the former and then for the batches it started.
func (s *batchScheduler[T]) wait() {
	<-s.formerDone
	s.running.Wait()
}
