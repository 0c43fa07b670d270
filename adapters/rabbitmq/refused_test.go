package rabbitmq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// trimObserver records, per message ID, the outcomes and whether a copy was
// reported trimmed.
type trimObserver struct {
	mu       sync.Mutex
	outcomes map[string][]consumer.Outcome
	trimmed  map[string]bool
}

func (o *trimObserver) Settled(_ context.Context, ev consumer.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes[ev.Message.ID] = append(o.outcomes[ev.Message.ID], ev.Outcome)
	if ev.Trimmed {
		o.trimmed[ev.Message.ID] = true
	}
}

func (o *trimObserver) BreakerChanged(bool) {}

// TestRetryRefusedDeadLettered runs the runtime over a Source with an 8 KiB
// MaxMessageSize and a handler that always fails: the 1 KiB message is
// retried until its attempts run out; the 9 KiB message's retry copy cannot
// fit, so after its first attempt it is dead-lettered with reason
// retry-refused, its body replaced by the markers (reported trimmed); the
// source queue ends empty and nothing loops.
func TestRetryRefusedDeadLettered(t *testing.T) {
	const limit, attempts = 8 << 10, 3
	queue := uniqueName("refused")
	cleanupTopology(t, queue, "ledger", testTiers)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", MaxMessageSize: limit, Prefetch: 16})
	publish(t, queue,
		&consumer.Message{ID: "small", Body: []byte(strings.Repeat("s", 1<<10))},
		&consumer.Message{ID: "big", Body: []byte(strings.Repeat("b", limit+1<<10))})
	obs := &trimObserver{outcomes: map[string][]consumer.Outcome{}, trimmed: map[string]bool{}}
	var mu sync.Mutex
	handled := map[string]int{}
	_, stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		handled[m.ID]++
		mu.Unlock()
		return errors.New(strings.Repeat("failure ", 512))
	}), consumer.Config{Name: "ledger", Concurrency: 2, Observer: obs, Retry: retry.Policy{
		MaxAttempts: attempts, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond, Jitter: retry.NoJitter,
	}})
	var dl []*consumer.Message
	adaptertest.WaitUntil(t, 30*time.Second, "both messages dead-lettered", func() bool {
		dl = browse(t, DeadLetterQueue(queue, "ledger"), KeyHeaderDefault)
		return len(dl) >= 2
	})
	stop()
	reasons := map[string]*consumer.Message{}
	for _, m := range dl {
		reasons[m.ID] = m
	}
	if m := reasons["big"]; m == nil || m.Header(consumer.HeaderDeadLetterReason) != consumer.ReasonRetryRefused || len(m.Body) != 0 ||
		m.Header(consumer.HeaderBodyRemovedSize) != strconv.Itoa(limit+1<<10) || m.Header(consumer.HeaderError) == "" {
		t.Errorf("big's dead letter: %+v", m)
	}
	if m := reasons["small"]; m == nil || m.Header(consumer.HeaderDeadLetterReason) != consumer.ReasonExhausted || len(m.Body) != 1<<10 {
		t.Errorf("small's dead letter: %+v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if handled["big"] != 1 || handled["small"] != attempts {
		t.Errorf("handled %v, want big once and small %d times", handled, attempts)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !obs.trimmed["big"] {
		t.Errorf("big's dead-letter copy not reported trimmed; outcomes %v", obs.outcomes["big"])
	}
	if n := depth(t, queue); n != 0 {
		t.Errorf("source holds %d", n)
	}
	t.Logf("outcomes: %v", obs.outcomes)
}

// TestUnroutableRetryHeals deletes every retry queue before the runtime
// starts: the first retry copy comes back unroutable while the broker
// answers (the probe succeeds), so it counts as an attempt, and the adapter
// declares the topology again, so the next retry copy is stored. The message
// runs its three attempts and ends in the dead-letter queue as exhausted;
// nothing is held, nothing loops.
func TestUnroutableRetryHeals(t *testing.T) {
	queue := uniqueName("heal")
	cleanupTopology(t, queue, "ledger", testTiers)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 16})
	for _, q := range src.topo.retryNames() {
		unroutable(t, q)
	}
	publish(t, queue, &consumer.Message{ID: "x", Body: []byte("b")})
	var mu sync.Mutex
	var seen []int
	_, stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		seen = append(seen, m.Attempt)
		mu.Unlock()
		return errors.New("fails")
	}), consumer.Config{Name: "ledger", Concurrency: 2, Retry: retry.Policy{
		MaxAttempts: 3, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond, Jitter: retry.NoJitter,
	}})
	var dl []*consumer.Message
	adaptertest.WaitUntil(t, 30*time.Second, "the message dead-lettered", func() bool {
		dl = browse(t, src.topo.dlq(), KeyHeaderDefault)
		return len(dl) >= 1
	})
	stop()
	if len(dl) != 1 || dl[0].Header(consumer.HeaderDeadLetterReason) != consumer.ReasonExhausted || dl[0].Attempt != 3 {
		t.Errorf("dead letters %d, first reason %q attempt %d", len(dl), dl[0].Header(consumer.HeaderDeadLetterReason), dl[0].Attempt)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0] != 1 || seen[2] != 3 {
		t.Errorf("handler saw attempts %v, want 1, 2, 3", seen)
	}
	if n := depth(t, queue); n != 0 {
		t.Errorf("source holds %d", n)
	}
}
