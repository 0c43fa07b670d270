package consumer

import "sync"

// laneKey names the lane a delivery runs on: deliveries of one lane run one
// after another, in the order they were scheduled. The zero laneKey is no
// lane: such a delivery runs on its own, beside any other.
type laneKey struct {
	kind      laneKind
	key       string // the ordering key, for laneByKey
	partition int32  // the partition, for laneByPartition
}

type laneKind uint8

const (
	laneNone laneKind = iota
	laneByKey
	laneByPartition
	laneSingle // every delivery on one lane: Concurrency 1 runs in arrival order
)

// laneKeyOf returns the lane of m under cfg, for both schedulers: with
// Concurrency 1 everything runs on one lane (arrival order); else per
// Ordering, a key's lane, or its partition's for OrderByPartition and for a
// message without a key.
func laneKeyOf(cfg *Config, m *Message) laneKey {
	switch {
	case cfg.Concurrency == 1:
		return laneKey{kind: laneSingle}
	case cfg.Ordering == Unordered:
		return laneKey{}
	case cfg.Ordering == OrderByPartition || m.Key == "":
		return laneKey{kind: laneByPartition, partition: m.Partition}
	}
	return laneKey{kind: laneByKey, key: m.Key}
}

// scheduler runs items one at a time per lane, in the order they were
// scheduled, on a fixed pool of workers. It knows nothing of deliveries or
// settlement: it calls run(worker, item), where worker is the index of the
// worker running it, so that the caller can keep state per worker.
//
// A lane with items is busy: it is either running on a worker or waiting in
// the ready queue. An item scheduled on a busy lane joins the lane's queue;
// on an idle lane (or on no lane) it makes a new lane ready. A worker takes
// the first ready lane, runs its next item, and puts the lane back at the
// end of the ready queue while it has more, so lanes take turns. Idle
// workers wait until a lane is ready.
type scheduler[T any] struct {
	run func(worker int, item T)

	mu      sync.Mutex
	ready   sync.Cond       // signalled when a lane is made ready
	queue   []*laneQueue[T] // queue[head:] are the ready lanes
	head    int
	lanes   map[laneKey]*laneQueue[T] // busy lanes, but those of no lane
	free    []*laneQueue[T]           // idle lanes, for reuse
	idle    int                       // workers waiting on ready
	quit    bool                      // set by stop: workers exit once no lane is ready
	workers sync.WaitGroup
}

// laneQueue is a busy lane's items: items[head] runs (or waits in the ready
// queue) and the rest wait behind it.
type laneQueue[T any] struct {
	key   laneKey
	items []T
	head  int
}

func newScheduler[T any](run func(worker int, item T)) *scheduler[T] {
	s := &scheduler[T]{run: run, lanes: make(map[laneKey]*laneQueue[T])}
	s.ready.L = &s.mu
	return s
}

// start starts n workers, numbered 0 to n-1.
func (s *scheduler[T]) start(n int) {
	for i := range n {
		s.workers.Go(func() { s.work(i) })
	}
}

// schedule runs each item after every item scheduled before it on its
// lane, key(item), or on its own, beside the others, when that is no lane.
func (s *scheduler[T]) schedule(items []T, key func(T) laneKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ready := 0
	for _, item := range items {
		k := key(item)
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
func (s *scheduler[T]) work(id int) {
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

// stop makes the workers exit once no lane is ready; wait waits for that.
func (s *scheduler[T]) stop() {
	s.mu.Lock()
	s.quit = true
	s.ready.Broadcast()
	s.mu.Unlock()
}

func (s *scheduler[T]) wait() { s.workers.Wait() }
