package consumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/retry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if err := logCheck.Err(); err != nil && code == 0 {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(code)
	}))
}

// logCheck sees every line the runtime logs in the tests that use discard
// (see envtest.LogCheck): TestMain fails the run when one carried a
// time.Duration attribute.
var logCheck = envtest.NewLogCheck(slog.DiscardHandler)

var discard = slog.New(logCheck)

// fastRetry retries after 1ms, up to attempts attempts.
func fastRetry(attempts int) retry.Policy {
	return retry.Policy{MaxAttempts: attempts, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Jitter: retry.NoJitter}
}

// fastOutage spaces outage and settlement retries by a few milliseconds.
var fastOutage = retry.Policy{InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond}

// env is one test's broker, source and consumer.
type env struct {
	t      *testing.T
	broker *memory.Broker
	source string
	src    *adaptertest.CountingSource
	rec    *recorder
	c      *consumer.Consumer
	done   chan error
}

// newEnv publishes msgs to a fresh broker and builds a Consumer reading them.
// cfg gets the name "test", a discarding logger and a recorder as Observer
// unless set.
func newEnv(t *testing.T, h consumer.Handler, cfg consumer.Config, msgs ...*consumer.Message) *env {
	t.Helper()
	e := &env{t: t, broker: memory.NewBroker(), source: "src", rec: newRecorder()}
	if len(msgs) > 0 {
		e.publish(msgs...)
	}
	e.src = adaptertest.NewCountingSource(e.broker.NewSource(e.source, "test"))
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.Logger == nil {
		cfg.Logger = discard
	}
	if cfg.Observer == nil {
		cfg.Observer = e.rec
	}
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	c, err := consumer.New(e.src, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

func (e *env) publish(msgs ...*consumer.Message) {
	e.t.Helper()
	if err := e.broker.Publish(context.Background(), e.source, msgs...); err != nil {
		e.t.Fatal(err)
	}
}

// startConsumer runs c; the returned stop stops it within 5s and fails the
// test if Stop or Run returns an error.
func startConsumer(t *testing.T, c *consumer.Consumer) (stop func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	return func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// start runs the consumer; stop (or the test's cleanup) ends it.
func (e *env) start() {
	e.done = make(chan error, 1)
	go func() { e.done <- e.c.Run(context.Background()) }()
	e.t.Cleanup(func() {
		if e.done != nil {
			e.stop(10 * time.Second)
		}
	})
}

// stop stops the consumer within d and returns Run's error.
func (e *env) stop(d time.Duration) error {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	serr := e.c.Stop(ctx)
	rerr := <-e.done
	e.done = nil
	if (serr == nil) != (rerr == nil) {
		e.t.Errorf("Stop returned %v but Run %v", serr, rerr)
	}
	return rerr
}

func (e *env) deadLetters() []*consumer.Message { return e.broker.DeadLetters(e.source, "test") }

// waitFor polls cond every 2ms for up to 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recorder is an Observer that keeps every event.
type recorder struct {
	mu      sync.Mutex
	events  []consumer.Event
	breaker []bool
	onEvent func(consumer.Event)
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) Settled(_ context.Context, ev consumer.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	f := r.onEvent
	r.mu.Unlock()
	if f != nil {
		f(ev)
	}
}

func (r *recorder) BreakerChanged(open bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.breaker = append(r.breaker, open)
}

func (r *recorder) count(o consumer.Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Outcome == o {
			n++
		}
	}
	return n
}

func (r *recorder) breakerChanges() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.breaker...)
}

func msgN(i int, key string) *consumer.Message {
	return &consumer.Message{ID: fmt.Sprintf("m-%05d", i), Key: key, Body: []byte(fmt.Sprint(i))}
}

// msgsN returns msgN(i, key(i)) for i in [0, n).
func msgsN(n int, key func(i int) string) []*consumer.Message {
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msgN(i, key(i))
	}
	return msgs
}

// counter counts handler calls per message ID.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func newCounter() *counter { return &counter{n: make(map[string]int)} }

func (c *counter) add(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[id]++
	return c.n[id]
}

func (c *counter) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

func (c *counter) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.n)
}

// raise makes peak at least v.
func raise(peak *atomic.Int32, v int32) {
	for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
	}
}
