package nats

import (
	"sync"

	"github.com/oncely/oncely/consumer"
)

// inbox hands deliveries from the pumps to Receive in batches: a pump
// appends each message it accepted and goes on pulling, and Receive takes
// everything queued, up to its max, in one call. Each pump may have at
// most its puller's quota (Config.Prefetch/4) queued or about to be, so a
// stream's messages ahead of Receive, in its pull buffer and here
// together, stay within Config.Prefetch.
//
// Pays for itself (N1, 2026-12-04, rounds alternating with the
// unbuffered hand-off it replaced, the same binary): one channel hand-off
// a message made Receive return about 2 deliveries a call, each call a
// wake-up of the intake goroutine and a turn of the runtime's intake;
// with the inbox Receive returns batches and N1's round median rose from
// 0.77-0.83 to 0.86-0.91 (see docs/benchmarks.md, "NATS JetStream").
type inbox struct {
	mu    sync.Mutex
	queue []*delivery
	ready chan struct{} // one pending signal: queue is not empty
}

func newInbox() *inbox { return &inbox{ready: make(chan struct{}, 1)} }

// put queues d, whose puller's slot the pump reserved.
func (in *inbox) put(d *delivery) {
	in.mu.Lock()
	in.queue = append(in.queue, d)
	first := len(in.queue) == 1
	in.mu.Unlock()
	if first {
		in.signal()
	}
}

func (in *inbox) signal() {
	select {
	case in.ready <- struct{}{}:
	default:
	}
}

// take returns up to max queued deliveries, nil when none is queued, and
// frees their pullers' slots.
func (in *inbox) take(max int) []consumer.Delivery {
	in.mu.Lock()
	n := min(max, len(in.queue))
	if n == 0 {
		in.mu.Unlock()
		return nil
	}
	out := make([]consumer.Delivery, n)
	for i, d := range in.queue[:n] {
		out[i] = d
	}
	for _, d := range in.queue[:n] {
		d.from.free()
	}
	rest := copy(in.queue, in.queue[n:])
	clear(in.queue[rest:])
	in.queue = in.queue[:rest]
	more := rest > 0
	in.mu.Unlock()
	if more {
		in.signal() // for the next Receive
	}
	return out
}
