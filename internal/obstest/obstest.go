// Package obstest is a scripted consumer.Source for the observability
// tests (metrics, tracing, health): it requeues retried copies, records acks
// and dead letters, and signals when a number of final settlements (acks
// plus dead letters) was reached.
package obstest

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Source is an in-memory consumer.Source reporting itself as Kafka.
type Source struct {
	mu      sync.Mutex
	pending []*consumer.Message
	acked   []string
	retried []map[string]string
	dead    map[string]map[string]string
	final   int
	target  int
	reached chan struct{}
	wake    chan struct{}
	closed  chan struct{}
	once    sync.Once

	connected atomic.Bool
}

// NewSource returns a connected Source whose Reached closes after target
// final settlements.
func NewSource(target int) *Source {
	s := &Source{
		dead:    map[string]map[string]string{},
		target:  target,
		reached: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}
	s.connected.Store(true)
	return s
}

// Msg returns a first-delivery message from source "payments".
func Msg(id string) *consumer.Message {
	return &consumer.Message{ID: id, Key: id, Source: "payments", Attempt: 1, Partition: -1, Offset: -1}
}

// Publish queues msgs for Receive.
func (s *Source) Publish(msgs ...*consumer.Message) {
	s.mu.Lock()
	s.pending = append(s.pending, msgs...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Reached is closed once target deliveries were acked or dead-lettered.
func (s *Source) Reached() <-chan struct{} { return s.reached }

// SetConnected sets what Connected reports.
func (s *Source) SetConnected(up bool) { s.connected.Store(up) }

// Acked returns the IDs acked so far, in order.
func (s *Source) Acked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acked)
}

// Retried returns the headers of the retry copies so far, in order.
func (s *Source) Retried() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.retried)
}

// Dead returns the dead-letter headers by message ID.
func (s *Source) Dead() map[string]map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.dead)
}

// settledFinal must be called with mu held.
func (s *Source) settledFinal() {
	s.final++
	if s.final == s.target {
		close(s.reached)
	}
}

// Receive implements consumer.Source.
func (s *Source) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	for {
		s.mu.Lock()
		if n := min(max, len(s.pending)); n > 0 {
			out := make([]consumer.Delivery, n)
			for i := range n {
				out[i] = &delivery{s: s, m: s.pending[i]}
			}
			s.pending = s.pending[n:]
			s.mu.Unlock()
			return out, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.closed:
			return nil, consumer.ErrSourceClosed
		case <-s.wake:
		}
	}
}

// Close implements consumer.Source.
func (s *Source) Close(context.Context) error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// Capabilities implements consumer.Source.
func (s *Source) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "kafka"}
}

// Connected implements consumer.Connected.
func (s *Source) Connected() bool { return s.connected.Load() }

type delivery struct {
	s *Source
	m *consumer.Message
}

func (d *delivery) Message() *consumer.Message { return d.m }

func (d *delivery) Ack(context.Context) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	d.s.acked = append(d.s.acked, d.m.ID)
	d.s.settledFinal()
	return nil
}

func (d *delivery) Retry(_ context.Context, _ time.Duration, h map[string]string) error {
	c := d.m.Clone()
	c.Headers = h
	c.Attempt = consumer.AttemptFromHeaders(h)
	d.s.mu.Lock()
	d.s.retried = append(d.s.retried, h)
	d.s.mu.Unlock()
	d.s.Publish(c)
	return nil
}

func (d *delivery) DeadLetter(_ context.Context, h map[string]string) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	d.s.dead[d.m.ID] = h
	d.s.settledFinal()
	return nil
}

// Run runs c until src reached its target of final settlements, then stops
// it; it fails t if that takes longer than 20 seconds.
func Run(t testing.TB, c *consumer.Consumer, src *Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-src.reached:
	case <-ctx.Done():
		src.mu.Lock()
		t.Errorf("only %d of %d deliveries settled in time", src.final, src.target)
		src.mu.Unlock()
	}
	require.NoError(t, c.Stop(ctx))
	require.NoError(t, <-runErr)
}

// FastConfig is a consumer config named "ledger" with concurrency 4, three
// attempts and millisecond backoffs, logging nothing, and duplicates allowed
// (the tests count deliveries, not effects; a test adding
// middleware.Idempotency resets Duplicates).
func FastConfig() consumer.Config {
	return consumer.Config{
		Duplicates:    consumer.AllowDuplicates("obstest: counts deliveries, not effects"),
		Name:          "ledger",
		Concurrency:   4,
		Logger:        slog.New(slog.DiscardHandler),
		Retry:         retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond},
		OutageBackoff: retry.Policy{InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond},
	}
}
