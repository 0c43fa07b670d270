package memory

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/oncely/oncely/consumer"
)

// errReleased is returned when a delivery is settled after its Source closed
// and put it back in the queue.
var errReleased = fmt.Errorf("memory: delivery released by its closed source: %w", consumer.ErrSourceClosed)

// Source reads one queue of a Broker as one consumer. It implements
// consumer.Source and consumer.BacklogReporter. Create it with
// (*Broker).NewSource.
type Source struct {
	q        *queue
	consumer string
	closed   chan struct{}

	// Guarded by q.mu.
	isClosed bool
	inflight map[*delivery]struct{}
}

var (
	_ consumer.Source          = (*Source)(nil)
	_ consumer.BacklogReporter = (*Source)(nil)
)

// Receive blocks until a message is ready and returns at most n deliveries
// in queue order. It waits on a signal (never spins), returns ctx.Err() when
// ctx is done and consumer.ErrSourceClosed after Close. Each delivery's
// Message is a fresh copy whose Attempt is the larger of the broker's
// delivery count and the oncely-attempt header.
func (s *Source) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	if n < 1 {
		return nil, fmt.Errorf("memory: Receive: max must be >= 1, got %d", n)
	}
	if err := s.q.b.fault(OpReceive); err != nil {
		return nil, err
	}
	q := s.q
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.mu.Lock()
		if s.isClosed {
			q.mu.Unlock()
			return nil, consumer.ErrSourceClosed
		}
		next := q.promoteLocked()
		if es := q.takeLocked(n); len(es) > 0 {
			ds := make([]consumer.Delivery, len(es))
			dv := make([]delivery, len(es))
			for i, e := range es {
				e.deliveries++
				m := e.msg.Clone()
				m.Attempt = max(e.deliveries, consumer.AttemptFromHeaders(m.Headers))
				d := &dv[i]
				d.s, d.e, d.msg = s, e, m
				s.inflight[d] = struct{}{}
				ds[i] = d
			}
			q.inflight += len(es)
			q.mu.Unlock()
			return ds, nil
		}
		wake := q.signal
		q.waiters++
		q.mu.Unlock()

		var due <-chan time.Time
		if !next.IsZero() {
			if timer == nil {
				timer = time.NewTimer(time.Until(next))
			} else {
				timer.Reset(time.Until(next))
			}
			due = timer.C
		}
		select {
		case <-wake:
		case <-due:
		case <-ctx.Done():
		case <-s.closed:
		}
		q.mu.Lock()
		q.waiters--
		q.mu.Unlock()
	}
}

// Close stops intake and puts every unsettled delivery of this Source back at
// the front of the queue, in publish order, for the next Receive on the same
// source name. Settling a released delivery fails with an error wrapping
// consumer.ErrSourceClosed. Close is idempotent.
func (s *Source) Close(context.Context) error {
	q := s.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if s.isClosed {
		return nil
	}
	s.isClosed = true
	close(s.closed)
	if len(s.inflight) == 0 {
		return nil
	}
	es := make([]*entry, 0, len(s.inflight))
	for d := range s.inflight {
		d.released = true
		es = append(es, d.e)
	}
	clear(s.inflight)
	q.inflight -= len(es)
	q.requeueLocked(es)
	return nil
}

// Capabilities reports a broker with native delays and its own delivery
// counts, without partitions or a delay limit.
func (s *Source) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "memory", NativeDelay: true, DeliveryCount: true}
}

// Backlog reports the queue's depth (ready, delayed and in flight) and the
// depth of this consumer's dead-letter queue, on partition -1.
func (s *Source) Backlog(context.Context) ([]consumer.Backlog, error) {
	return []consumer.Backlog{{
		Source:      s.q.name,
		Partition:   -1,
		Lag:         int64(s.q.depth()),
		DeadLetters: int64(len(s.q.b.DeadLetters(s.q.name, s.consumer))),
	}}, nil
}

// delivery is one hand-out of an entry. Its state is guarded by the queue's
// mutex.
type delivery struct {
	s        *Source
	e        *entry
	msg      *consumer.Message
	settled  bool
	released bool
}

func (d *delivery) Message() *consumer.Message { return d.msg }

// Ack removes the message from the queue.
func (d *delivery) Ack(context.Context) error {
	return d.settle(OpAck, nil)
}

// Retry queues a copy (same ID, Key and Body, headers replaced by headers)
// that is delivered no sooner than after from now, and removes the original.
func (d *delivery) Retry(_ context.Context, after time.Duration, headers map[string]string) error {
	return d.settle(OpRetry, func(q *queue) {
		c := d.msg.Clone()
		c.Headers = maps.Clone(headers)
		c.Attempt = 0
		e := &entry{msg: c, seq: q.b.nextSeq(1)}
		var due time.Time
		if after > 0 {
			due = time.Now().Add(after)
		}
		q.pushLocked([]*entry{e}, due)
	})
}

// DeadLetter stores a copy (same ID, Key and Body, headers replaced by
// headers) in the dead-letter queue of (source, consumer name) and removes
// the original.
func (d *delivery) DeadLetter(_ context.Context, headers map[string]string) error {
	return d.settle(OpDeadLetter, func(q *queue) {
		c := d.msg.Clone()
		c.Headers = maps.Clone(headers)
		q.b.deadLetter(q.name, d.s.consumer, c)
	})
}

// settle publishes (when publish is not nil) and removes the delivery, or
// fails leaving it unsettled.
func (d *delivery) settle(op Op, publish func(*queue)) error {
	q := d.s.q
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case d.settled:
		return consumer.ErrAlreadySettled
	case d.released:
		return errReleased
	}
	if err := q.b.fault(op); err != nil {
		return err
	}
	if publish != nil {
		publish(q)
	}
	d.settled = true
	delete(d.s.inflight, d)
	q.inflight--
	return nil
}
