package redis

import (
	"context"
	"sync"
)

// ackBatchMax bounds the entries one ack round trip carries.
const ackBatchMax = 1024

// ackReq is one Ack waiting for its round trip.
type ackReq struct {
	stream string
	id     string
	del    bool // also XDEL (retry stream)
	done   chan error
}

// acker writes concurrent acks together: one goroutine takes every request
// waiting and sends them as one pipeline (an XACK per stream, an XDEL for
// the retry stream), so acks cost a round trip per batch, not per entry.
type acker struct {
	s    *Source
	reqs chan *ackReq
	// mu guards stopped against the close of reqs: senders hold it shared.
	mu      sync.RWMutex
	stopped bool
	exited  chan struct{}
}

func newAcker(s *Source) *acker {
	a := &acker{s: s, reqs: make(chan *ackReq, ackBatchMax), exited: make(chan struct{})}
	go a.loop()
	return a
}

// ack acks one entry and returns once Redis answered. After stop it sends
// its own round trip.
func (a *acker) ack(ctx context.Context, stream, id string, del bool) error {
	r := &ackReq{stream: stream, id: id, del: del, done: make(chan error, 1)}
	a.mu.RLock()
	if a.stopped {
		a.mu.RUnlock()
		return a.flush(ctx, []*ackReq{r})
	}
	select {
	case a.reqs <- r:
		a.mu.RUnlock()
	case <-ctx.Done():
		a.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the loop once every request sent was written.
func (a *acker) stop() {
	a.mu.Lock()
	if !a.stopped {
		a.stopped = true
		close(a.reqs)
	}
	a.mu.Unlock()
	<-a.exited
}

func (a *acker) loop() {
	defer close(a.exited)
	batch := make([]*ackReq, 0, ackBatchMax)
	for r := range a.reqs {
		batch = append(batch[:0], r)
	fill:
		for len(batch) < ackBatchMax {
			select {
			case r, ok := <-a.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		err := a.flush(context.Background(), batch)
		for _, r := range batch {
			r.done <- err
		}
	}
}

// flush writes batch in one pipeline.
func (a *acker) flush(ctx context.Context, batch []*ackReq) error {
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
