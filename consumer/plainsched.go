package consumer

import "sync"

// plainScheduler is the plain reference scheduler: one intake goroutine
// receives and schedules; a fixed pool of workers takes ready lanes in
// turn and runs one item of each. It is the oracle of the property tests
// (TestScheduleProperties runs both schedulers on the same inputs) and the
// baseline the runtime's scheduler must beat on the broker-backed
// benchmarks to exist (docs/benchmarks-log.md, "Complexity that pays for
// itself"); should it stop winning by 3 %, this becomes the only scheduler.
//
// A lane with items is busy: it is either running on a worker or waiting in
// the ready queue. An item received on a busy lane joins the lane's queue;
// on an idle lane (or on no lane) it makes a new lane ready. A worker takes
// the first ready lane, runs its next item, and puts the lane back at the
// end of the ready queue while it has more, so lanes take turns. Idle
// workers wait until a lane is ready.
type plainScheduler[T any] struct {
	jobs[T]

	mu      sync.Mutex
	ready   sync.Cond       // signalled when a lane is made ready
	queue   []*laneQueue[T] // queue[head:] are the ready lanes
	head    int
	lanes   map[laneKey]*laneQueue[T] // busy lanes, but those of no lane
	free    []*laneQueue[T]           // idle lanes, for reuse
	idle    int                       // workers waiting on ready
	quit    bool                      // set by stop: workers exit once no lane is ready
	running sync.WaitGroup            // the workers

	intakeOff   bool // set by stopIntake: receive is called no more
	intakeErr   error
	intakeDone  chan struct{} // closed when receive returned an error
	intakeEnded chan struct{} // closed when the intake goroutine returns
}

// laneQueue is a busy lane's items: items[head] runs (or waits in the ready
// queue) and the rest wait behind it.
type laneQueue[T any] struct {
	key   laneKey
	items []T
	head  int
}

func newPlainScheduler[T any](j jobs[T]) *plainScheduler[T] {
	s := &plainScheduler[T]{
		jobs:        j,
		lanes:       make(map[laneKey]*laneQueue[T]),
		intakeDone:  make(chan struct{}),
		intakeEnded: make(chan struct{}),
	}
	s.ready.L = &s.mu
	return s
}

func (s *plainScheduler[T]) start() {
	for i := range s.workers {
		s.running.Go(func() { s.work(i) })
	}
	go s.intake()
}

// intake receives and schedules until receive fails or stopIntake.
func (s *plainScheduler[T]) intake() {
	defer close(s.intakeEnded)
	for {
		items, err := s.receive()
		s.schedule(items)
		s.mu.Lock()
		off := s.intakeOff
		if err != nil {
			s.intakeErr, s.intakeOff = err, true
			if !off {
				close(s.intakeDone)
			}
		}
		s.mu.Unlock()
		if off || err != nil {
			return
		}
	}
}

func (s *plainScheduler[T]) intakeStopped() <-chan struct{} { return s.intakeDone }

func (s *plainScheduler[T]) stopIntake() error {
	s.mu.Lock()
	s.intakeOff = true
	s.mu.Unlock()
	<-s.intakeEnded
	return s.intakeErr
}

// schedule runs each item after every item scheduled before it on its
// lane, or on its own, beside the others, when that is no lane.
func (s *plainScheduler[T]) schedule(items []T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ready := 0
	for _, item := range items {
		k := s.laneOf(item)
		if l := s.lanes[k]; l != nil {
			l.items = append(l.items, item)
			continue
		}
		var l *laneQueue[T]
		if n := len(s.free); n > 0 {
			l, s.free = s.free[n-1], s.free[:n-1]
		} else {
			l = new(laneQueue[T])
		}
		l.key, l.items = k, append(l.items, item)
		if k.kind != laneNone {
			s.lanes[k] = l
		}
		s.queue = append(s.queue, l)
		ready++
	}
	for range min(ready, s.idle) {
		s.ready.Signal()
	}
}

// work is worker id's loop: it runs ready lanes' items until stop.
func (s *plainScheduler[T]) work(id int) {
	var zero T
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.head == len(s.queue) {
			if s.quit {
				return
			}
			s.idle++
			s.ready.Wait()
			s.idle--
		}
		l := s.queue[s.head]
		s.queue[s.head] = nil
		switch s.head++; {
		case s.head == len(s.queue):
			s.queue, s.head = s.queue[:0], 0
		case s.head >= 1024 && 2*s.head >= len(s.queue):
			n := copy(s.queue, s.queue[s.head:])
			clear(s.queue[n:])
			s.queue, s.head = s.queue[:n], 0
		}
		item := l.items[l.head]
		l.items[l.head] = zero
		l.head++
		s.mu.Unlock()
		s.run(id, item)
		s.ran(1)
		s.mu.Lock()
		if l.head < len(l.items) {
			// This worker, back at the loop's top, takes the first ready
			// lane: no wake-up is needed.
			s.queue = append(s.queue, l)
			continue
		}
		if l.key.kind != laneNone {
			delete(s.lanes, l.key)
		}
		l.key, l.items, l.head = laneKey{}, l.items[:0], 0
		if cap(l.items) <= 64 && len(s.free) < 1024 {
			s.free = append(s.free, l)
		}
	}
}

func (s *plainScheduler[T]) stop() {
	s.mu.Lock()
	s.quit = true
	s.ready.Broadcast()
	s.mu.Unlock()
}

func (s *plainScheduler[T]) wait() { s.running.Wait() }
