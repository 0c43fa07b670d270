package memory

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/oncely/oncely/consumer"
)

// errReleased is returned when a delivery is settled after its Source closed
// and put it back in the queue.
var errReleased = fmt.Errorf("memory: delivery released by its closed source: %w", consumer.ErrSourceClosed)

// Source reads one queue of a Broker as one consumer. It implements
// consumer.Source, consumer.BacklogReporter and consumer.Prober. Create it with
// (*Broker).NewSource.
type Source struct {
	q        *queue
	consumer string
	closed   chan struct{}

	// Guarded by q.mu.
	isClosed bool
	batches  []*batch // handed out by Receive, with deliveries still open
}

var (
	_ consumer.Source          = (*Source)(nil)
	_ consumer.BacklogReporter = (*Source)(nil)
	_ consumer.Prober          = (*Source)(nil)
)

// Delivery states.
const (
	open int32 = iota
	settled
	released
)

// batch is what one Receive handed out; Close scans the open batches.
type batch struct {
	ds   []delivery
	open atomic.Int32 // deliveries neither settled nor released
}

// Receive blocks until a message is ready and returns at most n deliveries
// in queue order. It waits on a signal (never spins), returns ctx.Err() when
// ctx is done and consumer.ErrSourceClosed after Close. Each delivery's
// Message is a fresh copy whose Attempt is its oncely-attempt header, or 1:
// a delivery released by Close was never handled, so it never counts.
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
			b := &batch{ds: make([]delivery, len(es))}
			for i, e := range es {
				b.ds[i] = delivery{s: s, b: b, e: e}
			}
			b.open.Store(int32(len(es)))
			s.batches = append(s.pruneLocked(), b)
			q.inflight.Add(int64(len(es)))
			q.mu.Unlock()
			// Entries' messages never change: copy them outside the lock.
			ds := make([]consumer.Delivery, len(es))
			for i := range b.ds {
				d := &b.ds[i]
				m := d.e.msg.Clone()
				m.Attempt = max(1, consumer.AttemptFromHeaders(m.Headers))
				d.msg = m
				ds[i] = d
			}
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

// pruneLocked drops the batches whose deliveries are all settled.
func (s *Source) pruneLocked() []*batch {
	live := s.batches[:0]
	for _, b := range s.batches {
		if b.open.Load() > 0 {
			live = append(live, b)
		}
	}
	clear(s.batches[len(live):])
	return live
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
	var es []*entry
	for _, b := range s.batches {
		for i := range b.ds {
			if d := &b.ds[i]; d.state.CompareAndSwap(open, released) {
				d.done()
				es = append(es, d.e)
			}
		}
	}
	s.batches = nil
	if len(es) > 0 {
		q.requeueLocked(es)
	}
	return nil
}

// Capabilities reports a broker with native delays and no delay limit
// (MaxDelay 0: any delay is honoured), no partitions, no prefetch (it hands
// out only inside Receive) and no FanOut: consumer names compete for one
// queue per source. It keeps no delivery count of its own: Attempt comes from
// the oncely-attempt header.
func (s *Source) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "memory", NativeDelay: true, FanOut: false, Prefetch: 0, MaxDelay: 0}
}

// ConsumerName is the consumer name the Source was opened for (see
// consumer.ConsumerNamer).
func (s *Source) ConsumerName() string { return s.consumer }

// Probe reports whether the broker is up: nil unless (*Broker).SetDown made
// it down or InjectFaults(OpProbe, n) made this probe fail; ctx.Err() when
// ctx is done. It implements consumer.Prober.
func (s *Source) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.q.b.fault(OpProbe)
}

// Backlog reports the queue's depth (ready, delayed and in flight) and the
// depth of this consumer's dead-letter queue, on partition -1.
func (s *Source) Backlog(context.Context) ([]consumer.Backlog, error) {
	return []consumer.Backlog{{
		Source:      s.q.name,
		Partition:   -1,
		Lag:         int64(s.q.depth()),
		DeadLetters: int64(s.q.b.deadLetterCount(s.q.name, s.consumer)),
	}}, nil
}

// delivery is one hand-out of an entry.
type delivery struct {
	s     *Source
	b     *batch
	e     *entry
	msg   *consumer.Message
	state atomic.Int32
}

func (d *delivery) Message() *consumer.Message { return d.msg }

// Ack removes the message from the queue. It takes no queue lock.
func (d *delivery) Ack(context.Context) error {
	if err := d.check(); err != nil {
		return err
	}
	if err := d.s.q.b.fault(OpAck); err != nil {
		return err
	}
	if !d.state.CompareAndSwap(open, settled) {
		return d.check()
	}
	d.done()
	return nil
}

// Retry queues a copy (same ID, Key and Body, headers replaced by headers)
// that is delivered no sooner than after from now, and removes the original.
func (d *delivery) Retry(_ context.Context, after time.Duration, headers map[string]string) error {
	return d.publish(OpRetry, func(q *queue) {
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
	return d.publish(OpDeadLetter, func(q *queue) {
		c := d.msg.Clone()
		c.Headers = maps.Clone(headers)
		q.b.deadLetter(q.name, d.s.consumer, c)
	})
}

// publish runs fn and removes the delivery, under the queue lock so that a
// concurrent Close cannot release it in between; or fails leaving it
// unsettled and nothing published.
func (d *delivery) publish(op Op, fn func(*queue)) error {
	q := d.s.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := d.check(); err != nil {
		return err
	}
	if err := q.b.fault(op); err != nil {
		return err
	}
	if !d.state.CompareAndSwap(open, settled) {
		return d.check()
	}
	fn(q)
	d.done()
	return nil
}

// check returns the error for settling d in its current state.
func (d *delivery) check() error {
	switch d.state.Load() {
	case settled:
		return consumer.ErrAlreadySettled
	case released:
		return errReleased
	}
	return nil
}

// done accounts for d leaving the open state.
func (d *delivery) done() {
	d.b.open.Add(-1)
	d.s.q.inflight.Add(-1)
}
