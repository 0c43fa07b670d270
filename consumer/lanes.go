package consumer

import (
	"hash/maphash"
)

// lane is the items of one lane key, run one after another. A lane is busy
// while a worker runs one of its items or its task waits in the run queue;
// its queue holds the items behind that one. An idle lane stays in the lane
// table for the next key that hashes to its slot. Guarded by scheduler.mu.
type lane[T any] struct {
	key   laneKey  // when busy; an idle lane has none
	busy  bool     // see above
	held  int      // items of a solo run's last claim that hold it (see endSoloLocked)
	next  *lane[T] // the next lane in the slot's chain
	queue []T
	head  int // queue[head:] is waiting
}

// task is an item for a worker, with its lane (nil when it has none).
type task[T any] struct {
	l *lane[T]
	d T
}

// laneTable holds the lanes in a hash table with chaining: one hash and,
// with at least 4 slots per item in flight, mostly a one-lane chain per
// item. Lanes are exact: different keys never share a busy lane. A
// released lane stays, idle, in its slot's chain, and the next key that
// hashes to the slot takes it: no allocation, linking or unlinking per
// item. A slot's chain holds at most as many lanes as were busy in it at
// once.
type laneTable[T any] struct {
	slots []*lane[T]
	seed  maphash.Seed
	busy  int // busy lanes
}

// laneSlotsMax bounds the lane table's slots (512 KiB).
const laneSlotsMax = 1 << 16

func newLaneTable[T any](inFlight int) laneTable[T] {
	n := 64
	for n < 4*inFlight && n < laneSlotsMax {
		n <<= 1
	}
	return laneTable[T]{slots: make([]*lane[T], n), seed: maphash.MakeSeed()}
}

// lookup returns the busy lane of k and true, or a lane made busy for it
// and false.
func (t *laneTable[T]) lookup(k laneKey) (*lane[T], bool) {
	var h uint64
	if k.kind == laneByKey {
		h = maphash.String(t.seed, k.key)
	} else {
		// A multiplication by an odd constant mixes the partition's bits
		// and is one-to-one modulo the table's size.
		h = uint64(uint32(k.partition)) * 0x9e3779b97f4a7c15
	}
	slot := &t.slots[h&uint64(len(t.slots)-1)]
	var idle *lane[T]
	for l := *slot; l != nil; l = l.next {
		switch {
		case !l.busy:
			if idle == nil {
				idle = l
			}
		case l.key == k:
			return l, true
		}
	}
	if idle == nil {
		idle = &lane[T]{next: *slot}
		*slot = idle
	}
	idle.key, idle.busy = k, true
	t.busy++
	return idle, false
}

// release makes l, whose queue is empty, idle.
func (t *laneTable[T]) release(l *lane[T]) {
	l.busy = false
	t.busy--
	l.key = laneKey{} // keeps no message's memory alive
	if l.head > 0 {
		l.queue, l.head = l.queue[:0], 0
		if cap(l.queue) > 64 {
			l.queue = nil
		}
	}
}

// laneOfLocked returns the lane of item and whether it was busy already,
// or nil when item has no lane; s.lanes must exist and s.mu be held.
func (s *scheduler[T]) laneOfLocked(item T) (*lane[T], bool) {
	k := s.laneOf(item)
	if k.kind == laneNone {
		return nil, false
	}
	return s.lanes.lookup(k)
}

// dispatchLocked hands items, just received, to the workers, and returns
// the tasks for w (nil: none). When nothing else is in flight and handlers
// are fast, w runs all of them as a solo run (see runSoloLocked): in
// arrival order, on w alone, without lanes, until another worker would run
// an item beside it (endSoloLocked). Otherwise an item whose lane is busy
// queues behind it, and any other becomes a task: for w up to grabMax (at
// most one while handlers are slow), else in the run queue. s.mu must be
// held.
func (s *scheduler[T]) dispatchLocked(items []T, w *schedWorker[T]) []task[T] {
	if s.solo != nil {
		s.endSoloLocked() // another worker's solo run: it gets lanes first
	}
	if w == nil {
		for _, d := range items {
			if t, ok := s.placeLocked(d); ok {
				s.runq = append(s.runq, t)
			}
		}
		return nil
	}
	if s.lanes.slots != nil && s.lanes.busy == 0 && !s.spreading && len(items) > 0 {
		// No lane is busy: nothing else is in flight. w runs the items
		// itself, as received: no task is written per item.
		s.solo, s.soloRuns = w, s.soloRuns+1
		w.solo, w.end, w.seen = items, int32(len(items)), -1
		w.resetNext()
		return nil
	}
	own := w.tasks[:0]
	most := grabMax
	if s.spreading {
		most = 1
	}
	for _, d := range items {
		t, ok := s.placeLocked(d)
		switch {
		case !ok:
		case len(own) < most:
			own = append(own, t)
		default:
			s.runq = append(s.runq, t)
		}
	}
	return own
}

// placeLocked returns d's task, with its lane made busy, or false when d
// queued behind its busy lane. s.mu must be held.
func (s *scheduler[T]) placeLocked(d T) (task[T], bool) {
	if s.lanes.slots == nil {
		return task[T]{d: d}, true
	}
	l, busy := s.laneOfLocked(d)
	if l == nil {
		return task[T]{d: d}, true
	}
	if busy {
		l.queue = append(l.queue, d)
		return task[T]{}, false
	}
	return task[T]{l: l, d: d}, true
}

// pop removes the lane's next item and reports true, or reports false
// when none waits; s.mu must be held.
func (l *lane[T]) pop() (T, bool) {
	var zero T
	if l.head == len(l.queue) {
		return zero, false
	}
	d := l.queue[l.head]
	l.queue[l.head] = zero
	l.head++
	return d, true
}
