package adapters

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sync/atomic"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// openMemory opens mem://: a process-local memory broker (adapters/memory),
// new for each Open unless WithMemoryBroker gives one to share. It takes no
// host, path or query parameters. Two processes never share a mem:// broker,
// and its messages vanish with the process: it is for examples and tests,
// not for crash tests.
func openMemory(_ context.Context, u *url.URL, o options) (Broker, error) {
	q := newQuery(u)
	if err := q.err(); err != nil {
		return nil, err
	}
	if u.Host != "" || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		return nil, errMemURL
	}
	b := o.mem
	if b == nil {
		b = memory.NewBroker()
	}
	return &memBroker{b: b}, nil
}

var errMemURL = errors.New("mem:// takes no host or path; write exactly mem://")

// memBroker adapts a memory.Broker to Broker.
type memBroker struct {
	b      *memory.Broker
	closed atomic.Bool
}

func (m *memBroker) Kind() string { return "memory" }

// Memory returns the underlying memory broker of a mem:// Broker, or nil for
// another kind.
func Memory(b Broker) *memory.Broker {
	if c, ok := b.(idChecked); ok {
		b = c.Broker
	}
	if m, ok := b.(*memBroker); ok {
		return m.b
	}
	return nil
}

func (m *memBroker) Source(_ context.Context, source, consumerName string) (consumer.Source, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	return m.b.NewSource(source, consumerName), nil
}

func (m *memBroker) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	return m.b.Publish(ctx, source, msgs...)
}

func (m *memBroker) DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error) {
	s, err := m.session(ctx, source, consumerName)
	if err != nil {
		return nil, err
	}
	return listDeadLetters(ctx, s, limit)
}

func (m *memBroker) Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error) {
	s, err := m.session(ctx, source, consumerName)
	if err != nil {
		return RedriveResult{}, err
	}
	return redrive(ctx, s, func(ctx context.Context, msgs ...*consumer.Message) error { return m.b.Publish(ctx, source, msgs...) }, opts)
}

func (m *memBroker) Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error) {
	if !m.b.Exists(source) {
		return nil, noSource("memory queue", source)
	}
	if err := checkConsumer(ctx, m, source, consumerName); err != nil {
		return nil, err
	}
	return []consumer.Backlog{{
		Source:      source,
		Partition:   -1,
		Lag:         int64(m.b.Depth(source)),
		DeadLetters: int64(len(m.b.DeadLetters(source, consumerName))),
	}}, nil
}

func (m *memBroker) Consumers(_ context.Context, source string) ([]string, error) {
	if !m.b.Exists(source) {
		return nil, noSource("memory queue", source)
	}
	return m.b.Consumers(source), nil
}

func (m *memBroker) hasConsumer(_ context.Context, source, consumerName string) (bool, error) {
	return slices.Contains(m.b.Consumers(source), consumerName), nil
}

func (m *memBroker) Close() error {
	m.closed.Store(true)
	return nil
}

// session snapshots the dead-letter queue; removing a letter removes exactly
// that copy (by its offset in the queue), never one dead-lettered after the
// snapshot.
func (m *memBroker) session(ctx context.Context, source, consumerName string) (dlqSession, error) {
	if !m.b.Exists(source) {
		return nil, noSource("memory queue", source)
	}
	if err := checkConsumer(ctx, m, source, consumerName); err != nil {
		return nil, err
	}
	return &memSession{b: m.b, source: source, consumer: consumerName, msgs: m.b.DeadLetters(source, consumerName)}, nil
}

type memSession struct {
	b                *memory.Broker
	source, consumer string
	msgs             []*consumer.Message
	pos              int
}

func (s *memSession) total() int { return len(s.msgs) }

func (s *memSession) next(_ context.Context, n int) ([]heldLetter, error) {
	end := min(len(s.msgs), s.pos+n)
	out := make([]heldLetter, 0, end-s.pos)
	for _, msg := range s.msgs[s.pos:end] {
		offset := msg.Offset
		out = append(out, heldLetter{msg: msg, remove: func(context.Context) error {
			s.b.RemoveDeadLetter(s.source, s.consumer, offset)
			return nil
		}})
	}
	s.pos = end
	return out, nil
}

func (s *memSession) close(context.Context) error { return nil }
