package redis

import (
	"context"
	"sync"
	"time"
)

const (
	// ackBatchMax bounds the entries one ack round trip carries.
	ackBatchMax = 1024
	// ackQueueMax is how many written-off acks may wait: past it Ack waits
	// for the next round trip, so a slow Redis slows intake down.
	ackQueueMax = 8 * ackBatchMax
	// ackRetryMax bounds the wait between round trips after a failed one.
	ackRetryMax = time.Second
	// ackLinger is how long the acker waits for more acks before a round
	// trip carrying fewer than ackLingerBatch.
	ackLinger      = time.Millisecond
	ackLingerBatch = 128
)

// ackReq is one entry to ack.
type ackReq struct {
	stream string
	id     string
	del    bool // also XDEL (retry stream)
}

// acker writes acks in the background: Ack queues its entry and returns,
// and one goroutine sends everything queued as one pipeline (an XACK per
// stream, an XDEL for the retry stream), so acks cost a round trip per
// batch, not per entry. A failed round trip is retried with backoff; stop
// writes what is left. An ack lost with the process (a crash before its
// round trip) leaves the entry pending: it is reclaimed after the lease
// and delivered again, and the idempotency claim absorbs it.
type acker struct {
	s *Source

	mu      sync.Mutex
	queue   []ackReq
	flushed chan struct{} // closed after the next round trip
	stopped bool
	wake    chan struct{}
	stopc   chan struct{}
	exited  chan struct{}
}

func newAcker(s *Source) *acker {
	a := &acker{s: s, flushed: make(chan struct{}), wake: make(chan struct{}, 1), stopc: make(chan struct{}), exited: make(chan struct{})}
	go a.loop()
	return a
}

// ack queues one entry. After stop it writes it itself and returns the
// result.
func (a *acker) ack(ctx context.Context, stream, id string, del bool) error {
	r := ackReq{stream: stream, id: id, del: del}
	for {
		a.mu.Lock()
		if a.stopped {
			a.mu.Unlock()
			return a.flush(ctx, []ackReq{r})
		}
		if len(a.queue) < ackQueueMax {
			a.queue = append(a.queue, r)
			a.mu.Unlock()
			select {
			case a.wake <- struct{}{}:
			default:
			}
			return nil
		}
		flushed := a.flushed
		a.mu.Unlock()
		select {
		case <-flushed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop writes every queued ack (one last try for those that keep failing)
// and ends the loop.
func (a *acker) stop(ctx context.Context) error {
	a.mu.Lock()
	if !a.stopped {
		a.stopped = true
		close(a.stopc)
	}
	a.mu.Unlock()
	<-a.exited
	a.mu.Lock()
	left := a.queue
	a.queue = nil
	a.mu.Unlock()
	for len(left) > 0 {
		n := min(len(left), ackBatchMax)
		if err := a.flush(ctx, left[:n]); err != nil {
			return err
		}
		left = left[n:]
	}
	return nil
}

func (a *acker) loop() {
	defer close(a.exited)
	backoff := time.Duration(0)
	for {
		select {
		case <-a.wake:
		case <-a.stopc:
			return
		}
		// Linger a moment for more acks unless a batch is full: fewer,
		// larger round trips (Ack does not wait for them).
		a.mu.Lock()
		full := len(a.queue) >= ackLingerBatch
		a.mu.Unlock()
		if !full {
			select {
			case <-time.After(ackLinger):
			case <-a.stopc:
				return
			}
		}
		for {
			a.mu.Lock()
			n := min(len(a.queue), ackBatchMax)
			batch := a.queue[:n:n]
			a.queue = a.queue[n:]
			a.mu.Unlock()
			if n == 0 {
				break
			}
			err := a.flush(context.Background(), batch)
			a.mu.Lock()
			if err != nil {
				a.queue = append(batch, a.queue...)
			}
			close(a.flushed)
			a.flushed = make(chan struct{})
			a.mu.Unlock()
			if err == nil {
				backoff = 0
				continue
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), ackRetryMax)
			a.s.log.Warn("redis: acking entries failed; retrying (they stay pending until then)", "entries", n, "error", err, "retry_in", backoff.String())
			select {
			case <-time.After(backoff):
			case <-a.stopc:
				return
			}
		}
	}
}

// flush writes batch in one pipeline.
func (a *acker) flush(ctx context.Context, batch []ackReq) error {
	ctx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	byStream := map[string][]string{}
	var order []string
	deletes := map[string][]string{}
	for _, r := range batch {
		if _, ok := byStream[r.stream]; !ok {
			order = append(order, r.stream)
		}
		byStream[r.stream] = append(byStream[r.stream], r.id)
		if r.del {
			deletes[r.stream] = append(deletes[r.stream], r.id)
		}
	}
	p := a.s.client.Pipeline()
	for _, stream := range order {
		p.XAck(ctx, stream, a.s.cfg.Consumer, byStream[stream]...)
	}
	for _, stream := range order {
		if ids := deletes[stream]; len(ids) > 0 {
			p.XDel(ctx, stream, ids...)
		}
	}
	_, err := p.Exec(ctx)
	return err
}
