package consumer

import (
	"hash/maphash"
)

// lane is the deliveries of one ordering key, or one partition, handled one
// after another. A lane is busy while a worker runs one of its deliveries or
// its task waits in the run queue; its queue holds the deliveries behind
// that one. An idle lane stays in the lane table for the next key that
// hashes to its slot. Guarded by Consumer.mu.
type lane struct {
	key       string // the ordering key, when busy and byKey
	partition int32  // the partition, when busy and not byKey
	byKey     bool
	busy      bool  // see above; an idle lane has no key
	held      int   // deliveries of a solo run's last claim that hold it (see endSoloLocked)
	next      *lane // the next lane in the slot's chain
	queue     []Delivery
	head      int // queue[head:] is waiting
}

// task is a delivery for a worker, with its lane (nil when unordered).
type task struct {
	l *lane
	d Delivery
}

// laneTable holds the lanes in a hash table with chaining: one hash and,
// with at least 4 slots per delivery in flight, mostly a one-lane chain per
// delivery. Lanes are exact: different keys never share a busy lane. A
// released lane stays, idle, in its slot's chain, and the next key that
// hashes to the slot takes it: no allocation, linking or unlinking per
// delivery. A slot's chain holds at most as many lanes as were busy in it
// at once.
type laneTable struct {
	slots []*lane
	seed  maphash.Seed
	busy  int // busy lanes
}

// laneSlotsMax bounds the lane table's slots (512 KiB).
const laneSlotsMax = 1 << 16

func newLaneTable(maxInFlight int) laneTable {
	n := 64
	for n < 4*maxInFlight && n < laneSlotsMax {
		n <<= 1
	}
	return laneTable{slots: make([]*lane, n), seed: maphash.MakeSeed()}
}

// lookup returns the busy lane of a key (byKey) or partition and true, or
// a lane made busy for it and false.
func (t *laneTable) lookup(byKey bool, key string, partition int32) (*lane, bool) {
	var h uint64
	if byKey {
		partition = 0
		h = maphash.String(t.seed, key)
	} else {
		// A multiplication by an odd constant mixes the partition's bits
		// and is one-to-one modulo the table's size.
		h = uint64(uint32(partition)) * 0x9e3779b97f4a7c15
	}
	slot := &t.slots[h&uint64(len(t.slots)-1)]
	var idle *lane
	for l := *slot; l != nil; l = l.next {
		switch {
		case !l.busy:
			if idle == nil {
				idle = l
			}
		case l.byKey == byKey && l.partition == partition && l.key == key:
			return l, true
		}
	}
	if idle == nil {
		idle = &lane{next: *slot}
		*slot = idle
	}
	idle.key, idle.partition, idle.byKey, idle.busy = key, partition, byKey, true
	t.busy++
	return idle, false
}

// release makes l, whose queue is empty, idle.
func (t *laneTable) release(l *lane) {
	l.busy = false
	t.busy--
	if l.byKey {
		l.key = "" // keeps no message's memory alive
	}
	if l.head > 0 {
		l.queue, l.head = l.queue[:0], 0
		if cap(l.queue) > 64 {
			l.queue = nil
		}
	}
}

// laneOf returns the lane of m (see laneKeyOf) and whether it was busy
// already, or nil when m has no lane; c.lanes must exist and c.mu be held.
func (c *Consumer) laneOf(m *Message) (*lane, bool) {
	k := laneKeyOf(&c.cfg, m)
	if k.kind == laneNone {
		return nil, false
	}
	return c.lanes.lookup(k.kind == laneByKey, k.key, k.partition)
}

// dispatchLocked hands ds, whose window slots are taken, to the workers, and
// returns the tasks for w (nil: none). When nothing else is in flight and
// handlers are fast, w runs all of ds as a solo run (see runSoloLocked): in
// arrival order, on w alone, without lanes, until another worker would run a
// delivery beside it (endSoloLocked). Otherwise a delivery whose lane is
// busy queues behind it, and any other becomes a task: for w up to grabMax
// (at most one while handlers are slow), else in the run queue. c.mu must be
// held.
func (c *Consumer) dispatchLocked(ds []Delivery, w *worker) []task {
	if c.solo != nil {
		c.endSoloLocked() // another worker's solo run: it gets lanes first
	}
	if w == nil {
		for _, d := range ds {
			if t, ok := c.placeLocked(d); ok {
				c.runq = append(c.runq, t)
			}
		}
		return nil
	}
	if c.lanes.slots != nil && c.lanes.busy == 0 && !c.spreading && len(ds) > 0 {
		// No lane is busy: nothing else is in flight. w runs ds itself,
		// as received: no task is written per delivery.
		c.solo, c.soloRuns = w, c.soloRuns+1
		w.solo, w.end, w.seen = ds, int32(len(ds)), -1
		w.resetNext()
		return nil
	}
	own := w.run[:0]
	most := grabMax
	if c.spreading {
		most = 1
	}
	for _, d := range ds {
		t, ok := c.placeLocked(d)
		switch {
		case !ok:
		case len(own) < most:
			own = append(own, t)
		default:
			c.runq = append(c.runq, t)
		}
	}
	return own
}

// placeLocked returns d's task, with its lane made busy, or false when d
// queued behind its busy lane. c.mu must be held.
func (c *Consumer) placeLocked(d Delivery) (task, bool) {
	if c.lanes.slots == nil {
		return task{d: d}, true
	}
	l, busy := c.laneOf(d.Message())
	if l == nil {
		return task{d: d}, true
	}
	if busy {
		l.queue = append(l.queue, d)
		return task{}, false
	}
	return task{l: l, d: d}, true
}

// pop removes the lane's next delivery, or returns nil; c.mu must be held.
func (l *lane) pop() Delivery {
	if l.head == len(l.queue) {
		return nil
	}
	d := l.queue[l.head]
	l.queue[l.head] = nil
	l.head++
	return d
}
