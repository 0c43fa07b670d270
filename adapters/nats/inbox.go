package nats

import (
	"sync"

	"github.com/oncely/oncely/consumer"
)

// inbox hands deliveries from the pull subscriptions' callbacks to
// Receive in batches: a callback appends the message it accepted and
// returns (its subscription goes on), and Receive takes everything queued,
// up to its max, in one call. Each stream may have at most its puller's
// slots there (an eighth of its share of Config.Prefetch), so its messages
// ahead of Receive, in its pull buffer and here together, stay within that
// share.
//
// The simple hand-off with Consume callbacks that keeps the look-ahead
// bounded. What made N1 pay (0.95 of the raw loop, pooled over 15 rounds,
// 2026-12-04) is the split of Config.Prefetch it allows; the inbox over
// Messages().Next with the pull buffers cut to fit did not (see
// docs/benchmarks.md, "NATS JetStream", fourth look).
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
