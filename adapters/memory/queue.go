package memory

import (
	"container/heap"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncely/oncely/consumer"
)

// entry is one message in a queue.
type entry struct {
	msg *consumer.Message // the broker's copy; never handed out
	seq uint64            // publish order
	due time.Time         // not before; zero when ready at once
}

// queue holds one source's messages: ready (FIFO), delayed (by due time) and
// in flight (counted; the deliveries are tracked by their Source).
// Ready and delayed are guarded by mu; acks touch only atomics.
type queue struct {
	b    *Broker
	name string

	mu       sync.Mutex
	ready    []*entry // ready[head:] is the FIFO
	head     int
	delayed  delayHeap
	inflight atomic.Int64 // handed out, not settled
	waiters  int
	signal   chan struct{} // closed (and replaced) to wake waiting receivers
}

func newQueue(b *Broker, name string) *queue {
	return &queue{b: b, name: name, signal: make(chan struct{})}
}

// push adds es, ready at once when due is zero or past, else after due.
func (q *queue) push(es []*entry, due time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pushLocked(es, due)
}

func (q *queue) pushLocked(es []*entry, due time.Time) {
	if !due.IsZero() && due.After(time.Now()) {
		for _, e := range es {
			e.due = due
			heap.Push(&q.delayed, e)
		}
	} else {
		q.ready = append(q.ready, es...)
	}
	q.wakeLocked()
}

// requeueLocked puts released entries back at the front, in publish order.
func (q *queue) requeueLocked(es []*entry) {
	slices.SortFunc(es, func(a, b *entry) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	rest := q.ready[q.head:]
	nr := make([]*entry, 0, len(es)+len(rest))
	nr = append(append(nr, es...), rest...)
	q.ready, q.head = nr, 0
	q.wakeLocked()
}

// wakeLocked wakes every waiting receiver.
func (q *queue) wakeLocked() {
	if q.waiters == 0 {
		return
	}
	close(q.signal)
	q.signal = make(chan struct{})
}

// promoteLocked moves delayed entries that are due to the ready FIFO and
// returns the next due time, zero when nothing is delayed.
func (q *queue) promoteLocked() time.Time {
	if len(q.delayed) == 0 {
		return time.Time{}
	}
	now := time.Now()
	for len(q.delayed) > 0 {
		e := q.delayed[0]
		if e.due.After(now) {
			return e.due
		}
		heap.Pop(&q.delayed)
		q.ready = append(q.ready, e)
	}
	return time.Time{}
}

// takeLocked removes up to n ready entries from the front.
func (q *queue) takeLocked(n int) []*entry {
	avail := len(q.ready) - q.head
	n = min(n, avail)
	if n <= 0 {
		return nil
	}
	out := q.ready[q.head : q.head+n : q.head+n]
	q.head += n
	if q.head == len(q.ready) {
		q.ready, q.head = nil, 0
	} else if q.head > 1024 && q.head > len(q.ready)/2 {
		q.ready, q.head = slices.Clone(q.ready[q.head:]), 0
	}
	return out
}

func (q *queue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ready) - q.head + len(q.delayed) + int(q.inflight.Load())
}

// delayHeap orders delayed entries by due time, then publish order.
type delayHeap []*entry

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h delayHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)   { *h = append(*h, x.(*entry)) }
func (h *delayHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
