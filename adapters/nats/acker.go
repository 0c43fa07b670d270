package nats

import (
	"log/slog"
	"sync"
	"time"
)

// acker sends acks in bursts from one goroutine: Ack queues its message and
// returns, and the acker, before each burst, lingers ackLinger (1ms) for
// more unless ackLingerBurst are queued, then writes everything queued (one
// Ack each, into the connection's buffer) and flushes once, waiting for the
// server's PONG, while the next burst queues up. Acks are queued only after
// the handler's effect (and after the PubAck of a retry or dead-letter
// copy); queueing only moves their write. stop sends and flushes what is left, so
// every ack queued before Source.Close reaches the server; an ack lost with
// the process (or a failed write) leaves the message unacknowledged, and
// the server redelivers it after AckWait, absorbed by the idempotency claim.
// The queue holds at most the deliveries the Source holds unacknowledged
// (the source stream's MaxAckPending and the retry stream's share of
// Prefetch, with what the runtime took of them).
//
// Pays for itself (N1, 2026-12-03, alternating runs): with each worker's
// Ack written by the connection's flusher on its own, the process made
// 0.37-0.40 write calls a message (the raw loop 0.06-0.07); in bursts 0.08-0.09,
// its CPU a message fell 13-14 %, and N1's round median rose from 0.69 to
// 0.82 at load 4-8 and from 0.78 to 0.80 at load 0.3-2 (see
// docs/benchmarks-log.md, "NATS JetStream"). Writing the bursts without the
// flush (the flusher coalescing on its own) kept 0.30 writes a message and
// no gain. The linger (2026-12-04, alternating runs of 3 rounds): write
// calls 0.051 -> 0.042 a message and run medians 0.84-0.88 -> 0.89-0.95.
// Lingering before every burst, not only the first after a wake
// (2026-12-04, 76 rounds a side, alternating): write calls 0.042 -> 0.030
// a message (the raw loop's 0.035) and CPU 1.36 -> 1.27 times the raw
// loop's; the drain's median ratio unchanged (0.929, 0.932).
type acker struct {
	flush func() error // flushes the connection and waits for the server
	log   *slog.Logger
	after func(time.Duration) <-chan time.Time // time.After; tests replace it

	mu      sync.Mutex
	queue   []ackable
	spare   []ackable
	stopped bool
	wake    chan struct{} // one pending signal: the queue is not empty
	stopc   chan struct{}
	exited  chan struct{}
}

// ackable is what the acker acks: a jetstream.Msg.
type ackable interface{ Ack() error }

func newAcker(flush func() error, log *slog.Logger) *acker {
	a := &acker{flush: flush, log: log, after: time.After, wake: make(chan struct{}, 1), stopc: make(chan struct{}), exited: make(chan struct{})}
	go a.loop()
	return a
}

// ack queues m. After stop it sends m and flushes itself, returning the
// result.
func (a *acker) ack(m ackable) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		if err := m.Ack(); err != nil {
			return err
		}
		return a.flush()
	}
	a.queue = append(a.queue, m)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return nil
}

// ackLinger is how long the acker waits for more acks before a burst of
// fewer than ackLingerBurst.
const (
	ackLinger      = time.Millisecond
	ackLingerBurst = 128
)

func (a *acker) loop() {
	defer close(a.exited)
	for {
		select {
		case <-a.wake:
		case <-a.stopc:
			return
		}
		// Before each burst, linger a moment for more acks unless a burst
		// is full: fewer flushes (each a PING and its PONG, for client and
		// server), also while acks keep coming.
		for n := a.queued(); n > 0; n = a.queued() {
			if !a.lingerUnlessFull(n) {
				return // stop sends the rest
			}
			a.burst()
		}
	}
}

// lingerUnlessFull waits ackLinger unless n, the acks queued, make a full
// burst. It reports false once stop has begun.
func (a *acker) lingerUnlessFull(n int) bool {
	if n >= ackLingerBurst {
		select {
		case <-a.stopc:
			return false
		default:
			return true
		}
	}
	select {
	case <-a.after(ackLinger):
		return true
	case <-a.stopc:
		return false
	}
}

// queued returns how many acks wait for a burst.
func (a *acker) queued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

// burst sends everything queued, then flushes.
func (a *acker) burst() {
	a.mu.Lock()
	batch := a.queue
	a.queue, a.spare = a.spare[:0], nil
	a.mu.Unlock()
	failed := 0
	for i, m := range batch {
		if err := m.Ack(); err != nil {
			failed++
		}
		batch[i] = nil
	}
	if err := a.flush(); err != nil {
		a.log.Warn("flushing acks failed; the server redelivers what it did not get after AckWait", "acks", len(batch), "error", err)
	} else if failed > 0 {
		a.log.Warn("sending acks failed; the server redelivers them after AckWait", "failed", failed, "acks", len(batch))
	}
	a.mu.Lock()
	a.spare = batch[:0]
	a.mu.Unlock()
}

// stop ends the loop, then sends and flushes every ack still queued; acks
// after it are sent one by one. It returns the flush's error.
func (a *acker) stop() error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	close(a.stopc)
	a.mu.Unlock()
	<-a.exited
	a.mu.Lock()
	left := a.queue
	a.queue = nil
	a.mu.Unlock()
	var first error
	for _, m := range left {
		if err := m.Ack(); err != nil && first == nil {
			first = err
		}
	}
	if err := a.flush(); err != nil {
		return err
	}
	return first
}
