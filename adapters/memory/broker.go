// Package memory is an in-process broker with queue semantics, for tests,
// examples and the "mem://" URL. It needs no services.
//
// Each source name is one queue. Every Source opened on it, whatever its
// consumer name, competes for the queue's messages (as consumers of one
// RabbitMQ or SQS queue do; Capabilities().FanOut is false). A delivery stays
// in flight until it is settled; closing its Source puts it back at the front
// of the queue in publish order, and since it was never handled its Attempt
// stays as it was. The broker delays retried copies natively and keeps a
// dead-letter queue per (source, consumer name). Nothing is persisted: a
// Broker's messages live as long as the Broker.
//
// For tests it can fail on purpose: InjectFaults fails the next n calls of
// one operation (a retry or dead-letter copy publish, an ack, a receive, a
// probe), SetDown fails them all until it is called again.
package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncely/oncely/consumer"
)

// ErrInjected is wrapped by the error of an operation made to fail with
// (*Broker).InjectFaults or (*Broker).SetDown.
var ErrInjected = errors.New("memory: injected fault")

// Op names a broker operation that InjectFaults can make fail.
type Op int

const (
	// OpReceive is Source.Receive.
	OpReceive Op = iota
	// OpAck is Delivery.Ack.
	OpAck
	// OpRetry is Delivery.Retry (the publish of the retried copy).
	OpRetry
	// OpDeadLetter is Delivery.DeadLetter (the publish of the dead-letter copy).
	OpDeadLetter
	// OpProbe is Source.Probe.
	OpProbe
	opCount
)

// String names the operation.
func (o Op) String() string {
	switch o {
	case OpReceive:
		return "receive"
	case OpAck:
		return "ack"
	case OpRetry:
		return "retry"
	case OpDeadLetter:
		return "dead-letter"
	case OpProbe:
		return "probe"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Broker is an in-process message broker. The zero value is not usable; call
// NewBroker. A Broker is safe for concurrent use.
type Broker struct {
	mu     sync.Mutex
	queues map[string]*queue
	dlq    map[dlqKey]*deadLetters
	// sources holds every (source, consumer) a Source was opened for.
	sources map[dlqKey]bool
	faults  [opCount]atomic.Int64
	down    atomic.Bool
	seq     uint64
}

type dlqKey struct{ source, consumer string }

// NewBroker returns an empty Broker.
func NewBroker() *Broker {
	return &Broker{
		queues:  make(map[string]*queue),
		dlq:     make(map[dlqKey]*deadLetters),
		sources: make(map[dlqKey]bool),
	}
}

// queue returns the queue named source, creating it when absent.
func (b *Broker) queue(source string) *queue {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[source]
	if q == nil {
		q = newQueue(b, source)
		b.queues[source] = q
	}
	return q
}

// nextSeq returns a broker-wide increasing sequence number (the publish order).
func (b *Broker) nextSeq(n int) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.seq + 1
	b.seq += uint64(n)
	return s
}

// Publish appends copies of msgs to the queue named source, in order, and
// wakes waiting receivers. The copies get Source = source, Partition and
// Offset -1 and, when zero, Timestamp = now; Attempt is set on delivery.
// Publish is the producers' way in (oncely's retry copies are queued by the
// Source itself), so the copies' "oncely-" headers are moved aside
// (consumer.DistrustHeaders): a producer cannot set an attempt count or
// failure context. A nil
// message is an error and nothing is published. ctx is not used: publishing
// to memory cannot block.
func (b *Broker) Publish(_ context.Context, source string, msgs ...*consumer.Message) error {
	if source == "" {
		return errors.New("memory: Publish: empty source name")
	}
	for i, m := range msgs {
		if m == nil {
			return fmt.Errorf("memory: Publish: message %d is nil", i)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	now := time.Now()
	es := make([]*entry, len(msgs))
	seq := b.nextSeq(len(msgs))
	for i, m := range msgs {
		c := m.Clone()
		c.Source, c.Partition, c.Offset, c.Attempt = source, -1, -1, 0
		consumer.DistrustHeaders(c.Headers)
		if c.Timestamp.IsZero() {
			c.Timestamp = now
		}
		es[i] = &entry{msg: c, seq: seq + uint64(i)}
	}
	b.queue(source).push(es, time.Time{})
	return nil
}

// NewSource opens a Source reading the queue named source as consumer
// consumerName (which names its dead-letter queue). Sources on the same
// source name compete for its messages.
func (b *Broker) NewSource(source, consumerName string) consumer.Source {
	b.mu.Lock()
	b.sources[dlqKey{source, consumerName}] = true
	b.mu.Unlock()
	return &Source{q: b.queue(source), consumer: consumerName, closed: make(chan struct{})}
}

// DeadLetters returns copies of the messages dead-lettered from source by
// consumerName, oldest first. Each copy's Offset is its position in that
// dead-letter queue: numbered from 0 in the order written and never reused,
// so RemoveDeadLetter names exactly one dead letter.
func (b *Broker) DeadLetters(source, consumerName string) []*consumer.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	dl := b.dlq[dlqKey{source, consumerName}]
	if dl == nil {
		return []*consumer.Message{}
	}
	out := make([]*consumer.Message, len(dl.msgs))
	for i, m := range dl.msgs {
		out[i] = m.Clone()
	}
	return out
}

// Consumers returns the consumer names that opened a Source on source or
// dead-lettered from it, sorted.
func (b *Broker) Consumers(source string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []string{}
	for k := range b.sources {
		if k.source == source {
			out = append(out, k.consumer)
		}
	}
	for k := range b.dlq {
		if k.source == source && !b.sources[k] {
			out = append(out, k.consumer)
		}
	}
	slices.Sort(out)
	return out
}

// Exists reports whether the queue named source exists: a message was
// published to it or a Source opened on it.
func (b *Broker) Exists(source string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queues[source] != nil
}

// Depth returns the number of messages in the queue named source that are not
// settled yet: ready, waiting out a retry delay, or in flight.
func (b *Broker) Depth(source string) int {
	b.mu.Lock()
	q := b.queues[source]
	b.mu.Unlock()
	if q == nil {
		return 0
	}
	return q.depth()
}

// InFlight returns the number of messages of the queue named source that are
// delivered and not settled.
func (b *Broker) InFlight(source string) int {
	b.mu.Lock()
	q := b.queues[source]
	b.mu.Unlock()
	if q == nil {
		return 0
	}
	return int(q.inflight.Load())
}

// InjectFaults makes the next n calls of op, on any source, fail with
// ErrInjected without any effect: a failed Ack, Retry or DeadLetter leaves
// the delivery unsettled (and publishes nothing), a failed Receive hands out
// nothing, a failed Probe reports the broker down. n replaces any count left from an earlier call; 0 clears it.
func (b *Broker) InjectFaults(op Op, n int) {
	b.faults[op].Store(int64(n))
}

// SetDown makes the broker down (true) or up again (false). While it is down
// every Receive, Ack, Retry, DeadLetter and Probe of its Sources fails with an
// error wrapping ErrInjected and has no effect, as in an outage; a Receive
// already waiting keeps waiting. Publish, DeadLetters and the other methods of
// Broker keep working, so a test can still set up and inspect the queues.
func (b *Broker) SetDown(down bool) {
	b.down.Store(down)
}

// fault fails op when the broker is down, or consumes one injected fault for
// op, if any.
func (b *Broker) fault(op Op) error {
	if b.down.Load() {
		return fmt.Errorf("memory: %s: broker down: %w", op, ErrInjected)
	}
	for {
		n := b.faults[op].Load()
		if n <= 0 {
			return nil
		}
		if b.faults[op].CompareAndSwap(n, n-1) {
			return fmt.Errorf("memory: %s: %w", op, ErrInjected)
		}
	}
}

func (b *Broker) deadLetter(source, consumerName string, m *consumer.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := dlqKey{source, consumerName}
	dl := b.dlq[k]
	if dl == nil {
		dl = &deadLetters{}
		b.dlq[k] = dl
	}
	m.Offset = dl.next
	dl.next++
	dl.msgs = append(dl.msgs, m)
}

func (b *Broker) deadLetterCount(source, consumerName string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if dl := b.dlq[dlqKey{source, consumerName}]; dl != nil {
		return len(dl.msgs)
	}
	return 0
}
