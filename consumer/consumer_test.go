package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// TestPerKeyOrder: 10,000 messages over 100 keys with handler latencies
// that switch the runtime between taking tasks in batches (fast handlers)
// and spreading them over idle workers (slow ones). Every key's messages are
// handled in publish order, one at a time, keys overlap in time, and every
// delivery is settled exactly once. Catches: a scheduler that runs two
// deliveries of one key at once, out of order, or settles one twice.
func TestPerKeyOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     consumer.Config
		latency func() time.Duration
	}{
		{"random200us/c16", consumer.Config{Concurrency: 16}, func() time.Duration {
			return time.Duration(rand.IntN(200)) * time.Microsecond
		}},
		// Mostly instant with a rare slow one: workers take tasks in
		// batches and must give back those behind a slow handler.
		{"mostlyFast/c4", consumer.Config{Concurrency: 4}, func() time.Duration {
			if rand.IntN(100) == 0 {
				return 3 * time.Millisecond
			}
			return 0
		}},
		{"mostlyFast/c16/inflight32", consumer.Config{Concurrency: 16, MaxInFlight: 32}, func() time.Duration {
			if rand.IntN(50) == 0 {
				return 2 * time.Millisecond
			}
			return 0
		}},
	} {
		// In a synctest bubble: the handlers' latencies and the runtime's
		// timers run on the fake clock, so the interleavings do not depend on
		// the machine's load.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testPerKeyOrder(t, tc.cfg, tc.latency) })
		})
	}
}

func testPerKeyOrder(t *testing.T, cfg consumer.Config, latency func() time.Duration) {
	const n, keys = 10_000, 100
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("m-%05d", i), Key: fmt.Sprintf("key-%03d", i%keys), Body: []byte(strconv.Itoa(i / keys))}
	}
	var (
		mu          sync.Mutex
		next        = make(map[string]int) // key → next expected sequence
		running     = make(map[string]bool)
		maxParallel int
		handled     int
	)
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		seq, _ := strconv.Atoi(string(m.Body))
		mu.Lock()
		if running[m.Key] {
			t.Errorf("%s: two messages of key %s ran at once", m.ID, m.Key)
		}
		running[m.Key] = true
		if seq != next[m.Key] {
			t.Errorf("key %s: got sequence %d, want %d", m.Key, seq, next[m.Key])
		}
		next[m.Key] = seq + 1
		maxParallel = max(maxParallel, len(running))
		mu.Unlock()

		if d := latency(); d > 0 {
			time.Sleep(d)
		}

		mu.Lock()
		delete(running, m.Key)
		handled++
		mu.Unlock()
		return nil
	})
	e := newEnv(t, h, cfg, msgs...)
	e.start()
	waitFor(t, "every message to be acked", func() bool { return e.src.Stats().Acked >= n })
	if err := e.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if handled != n {
		t.Errorf("handled %d, want %d", handled, n)
	}
	for k := range keys {
		if key := fmt.Sprintf("key-%03d", k); next[key] != n/keys {
			t.Errorf("key %s: %d messages handled, want %d", key, next[key], n/keys)
		}
	}
	if maxParallel < 2 {
		t.Errorf("at most %d keys ran at once; want parallelism > 1", maxParallel)
	}
	t.Logf("max keys in parallel: %d", maxParallel)
	st := e.src.Stats()
	if st.Acked != n || st.Double != 0 || st.Outstanding != 0 || st.Retried != 0 || st.DeadLettered != 0 {
		t.Errorf("settlements %+v, want exactly %d acks", st, n)
	}
	if d := e.broker.Depth(e.source); d != 0 {
		t.Errorf("broker depth %d after stop, want 0", d)
	}
}

// TestSettleOnceWithPanicsAndFailures: handlers panic or fail on first
// attempts; every delivery is settled exactly once and every message is
// processed once.
func TestSettleOnceWithPanicsAndFailures(t *testing.T) {
	const n = 500
	msgs := msgsN(n, func(i int) string { return fmt.Sprintf("k%d", i%20) })
	// wantCalls is how often message i reaches the handler.
	wantCalls := func(i int) int {
		switch {
		case i == 42:
			return 3 // panics every time: dead-lettered after 3 attempts
		case i%77 == 0:
			return 3 // panics, then fails
		case i%11 == 0:
			return 3
		case i%7 == 0:
			return 2
		}
		return 1
	}
	calls, ok := newCounter(), newCounter()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		i, _ := strconv.Atoi(string(m.Body))
		call := calls.add(m.ID)
		switch {
		case i == 42:
			panic("always panics")
		case i%7 == 0 && call == 1:
			panic("first attempt panics")
		case i%11 == 0 && call <= 2:
			return errors.New("fails twice")
		}
		if call != m.Attempt {
			t.Errorf("%s: call %d has Attempt %d", m.ID, call, m.Attempt)
		}
		ok.add(m.ID)
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 8, Retry: fastRetry(3)}, msgs...)
	e.start()
	waitFor(t, "every message to be settled", func() bool { return e.src.Stats().Acked+len(e.deadLetters()) >= n })
	if err := e.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	wantRetries := 0
	for i, m := range msgs {
		wantRetries += wantCalls(i) - 1 // every failed attempt but m-00042's last is retried
		if got := calls.get(m.ID); got != wantCalls(i) {
			t.Errorf("%s reached the handler %d times, want %d", m.ID, got, wantCalls(i))
		}
		wantOK := 1
		if i == 42 {
			wantOK = 0
		}
		if ok.get(m.ID) != wantOK {
			t.Errorf("%s processed %d times, want %d", m.ID, ok.get(m.ID), wantOK)
		}
	}
	st := e.src.Stats()
	if st.Acked != n-1 || st.Retried != wantRetries || st.DeadLettered != 1 || st.Double != 0 || st.Outstanding != 0 {
		t.Errorf("settlements %+v, want %d acks, %d retries, 1 dead letter, no double or open", st, n-1, wantRetries)
	}
	if st.Received != st.Acked+st.Retried+st.DeadLettered {
		t.Errorf("received %d deliveries but settled %d", st.Received, st.Acked+st.Retried+st.DeadLettered)
	}
	dl := e.deadLetters()
	if len(dl) != 1 || dl[0].ID != "m-00042" || dl[0].Header(consumer.HeaderDeadLetterReason) != consumer.ReasonPanic ||
		dl[0].Header(consumer.HeaderErrorType) != "panic" || !strings.Contains(dl[0].Header(consumer.HeaderStack), "consumer_test") ||
		dl[0].Header(consumer.HeaderError) != "panic: always panics" {
		t.Errorf("dead letters: %+v", dl)
	}
}

// TestPoison: one always-failing message among 100 good ones at concurrency
// 10 is dead-lettered after MaxAttempts with reason and error headers; the
// good ones are processed once each.
func TestPoison(t *testing.T) {
	const good, attempts = 100, 4
	var msgs []*consumer.Message
	for i := range good {
		msgs = append(msgs, msgN(i, fmt.Sprintf("k%d", i%10)))
		if i == good/2 {
			msgs = append(msgs, &consumer.Message{ID: "poison", Key: "k3", Body: []byte("poison-body"), Headers: map[string]string{"x-trace": "abc"}})
		}
	}
	ok, poison := newCounter(), atomic.Int32{}
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		if m.ID == "poison" {
			poison.Add(1)
			return fmt.Errorf("cannot apply: %w", errPoison)
		}
		ok.add(m.ID)
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 10, Retry: fastRetry(attempts)}, msgs...)
	e.start()
	waitFor(t, "the poison message in the DLQ", func() bool { return len(e.deadLetters()) >= 1 && e.src.Stats().Acked >= good })
	if err := e.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for i := range good {
		if id := fmt.Sprintf("m-%05d", i); ok.get(id) != 1 {
			t.Errorf("%s processed %d times", id, ok.get(id))
		}
	}
	if ok.distinct() != good {
		t.Errorf("%d good messages processed, want %d", ok.distinct(), good)
	}
	if got := poison.Load(); got != attempts {
		t.Errorf("poison handled %d times, want %d", got, attempts)
	}
	dl := e.deadLetters()
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	m := dl[0]
	want := map[string]string{
		consumer.HeaderDeadLetterReason: consumer.ReasonExhausted,
		consumer.HeaderError:            "cannot apply: poison pill",
		consumer.HeaderErrorType:        "",
		consumer.HeaderAttempt:          strconv.Itoa(attempts),
		consumer.HeaderConsumer:         "test",
		consumer.HeaderOriginalSource:   "src",
		"x-trace":                       "abc",
	}
	for k, v := range want {
		if m.Header(k) != v {
			t.Errorf("header %s = %q, want %q", k, m.Header(k), v)
		}
	}
	if m.ID != "poison" || m.Key != "k3" || string(m.Body) != "poison-body" {
		t.Errorf("dead letter %q %q %q changed", m.ID, m.Key, m.Body)
	}
	st := e.src.Stats()
	if st.Acked != good || st.Retried != attempts-1 || st.DeadLettered != 1 || st.Double != 0 {
		t.Errorf("settlements %+v", st)
	}
	if got := e.rec.count(consumer.OutcomeDeadLettered); got != 1 {
		t.Errorf("%d dead-lettered events, want 1", got)
	}
}

var errPoison = errors.New("poison pill")

// TestMissingAndInvalidID: messages without ID or with an oversized one are
// dead-lettered with their reasons and never reach the handler.
func TestMissingAndInvalidID(t *testing.T) {
	long := strings.Repeat("x", consumer.MaxIDLengthDefault+1)
	limit := strings.Repeat("y", consumer.MaxIDLengthDefault)
	calls := newCounter()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		calls.add(m.ID)
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 2},
		&consumer.Message{Key: "a", Body: []byte("no id")},
		&consumer.Message{ID: long, Key: "a", Body: []byte("long id")},
		&consumer.Message{ID: limit, Key: "a", Body: []byte("limit id")},
		&consumer.Message{ID: "fine", Key: "a", Body: []byte("fine")},
	)
	e.start()
	waitFor(t, "two dead letters and two acks", func() bool { return len(e.deadLetters()) >= 2 && e.src.Stats().Acked >= 2 })
	if err := e.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if calls.distinct() != 2 || calls.get("fine") != 1 || calls.get(limit) != 1 {
		t.Errorf("handler saw %v, want the two valid IDs once", calls.n)
	}
	dl := e.deadLetters()
	if len(dl) != 2 {
		t.Fatalf("%d dead letters", len(dl))
	}
	reasons := map[string]string{string(dl[0].Body): dl[0].Header(consumer.HeaderDeadLetterReason), string(dl[1].Body): dl[1].Header(consumer.HeaderDeadLetterReason)}
	if reasons["no id"] != consumer.ReasonMissingID || reasons["long id"] != consumer.ReasonInvalidID {
		t.Errorf("reasons %v", reasons)
	}
	for _, m := range dl {
		if m.Header(consumer.HeaderError) == "" || m.Header(consumer.HeaderAttempt) != "1" {
			t.Errorf("dead letter %q lacks error or attempt headers: %v", m.Body, m.Headers)
		}
		if string(m.Body) == "long id" && m.ID != long {
			t.Errorf("invalid ID changed to %q", m.ID)
		}
	}
}

// TestGracefulStopDrains: Stop waits for in-flight handlers, which finish
// with live contexts and are acked; undelivered messages stay on the broker.
func TestGracefulStopDrains(t *testing.T) {
	const n, workers = 10, 2
	release := make(chan struct{})
	var started, cancelled atomic.Int32
	h := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
		started.Add(1)
		<-release
		if ctx.Err() != nil {
			cancelled.Add(1)
		}
		return nil
	})
	msgs := msgsN(n, func(i int) string { return fmt.Sprint(i) })
	e := newEnv(t, h, consumer.Config{Concurrency: workers, MaxInFlight: workers}, msgs...)
	e.start()
	waitFor(t, "both workers busy", func() bool { return started.Load() == workers })

	stopped := make(chan error, 1)
	go func() { stopped <- e.stop(10 * time.Second) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned %v while handlers were running", err)
	case <-time.After(100 * time.Millisecond):
	}
	callsAtStop := e.src.Stats().ReceiveCalls
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	st := e.src.Stats()
	if st.Acked != workers || st.Outstanding != 0 || started.Load() != workers || cancelled.Load() != 0 {
		t.Errorf("after drain: %+v, %d started, %d cancelled; want %d acked with live contexts", st, started.Load(), cancelled.Load(), workers)
	}
	if st.ReceiveCalls != callsAtStop {
		t.Errorf("Receive called %d times after Stop", st.ReceiveCalls-callsAtStop)
	}
	if d, f := e.broker.Depth(e.source), e.broker.InFlight(e.source); d != n-workers || f != 0 {
		t.Errorf("broker depth %d in flight %d, want %d and 0", d, f, n-workers)
	}
}

// TestHardStop: after SoftStopTimeout, handler contexts are cancelled and
// their deliveries are left unsettled; closing the source hands them back,
// with their Attempt unchanged (a Source released by Close never counts).
func TestHardStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  consumer.Config
		stop time.Duration // Stop's own deadline
	}{
		{"SoftStopTimeout", consumer.Config{Concurrency: 4, SoftStopTimeout: 30 * time.Millisecond}, 10 * time.Second},
		{"StopDeadline", consumer.Config{Concurrency: 4}, 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 20
				var started, succeeded atomic.Int32
				h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
					started.Add(1)
					<-ctx.Done()
					if m.ID == "m-00001" {
						// Handlers that finish despite the cancellation are acked.
						succeeded.Add(1)
						return nil
					}
					return ctx.Err()
				})
				msgs := msgsN(n, func(i int) string { return fmt.Sprint(i % 4) })
				e := newEnv(t, h, tc.cfg, msgs...)
				e.start()
				waitFor(t, "four handlers running", func() bool { return started.Load() == 4 })
				begin := time.Now()
				if err := e.stop(tc.stop); err != nil {
					t.Fatal(err)
				}
				if el := time.Since(begin); el > 5*time.Second {
					t.Errorf("stop took %s", el)
				}
				st := e.src.Stats()
				if st.Acked != int(succeeded.Load()) || st.Retried != 0 || st.DeadLettered != 0 || st.Double != 0 {
					t.Errorf("settlements %+v, want only the %d finished handlers acked", st, succeeded.Load())
				}
				if got := e.rec.count(consumer.OutcomeAbandoned); got != st.Received-st.Acked {
					t.Errorf("%d abandoned events, want %d", got, st.Received-st.Acked)
				}
				if d, f := e.broker.Depth(e.source), e.broker.InFlight(e.source); d != n-st.Acked || f != 0 {
					t.Errorf("broker depth %d in flight %d, want %d and 0", d, f, n-st.Acked)
				}
				again := adaptertest.ReceiveN(t, e.broker.NewSource(e.source, "test"), n-st.Acked, 5*time.Second)
				redelivered := 0
				for _, d := range again {
					if d.Message().Attempt == 1 {
						redelivered++
					}
				}
				if redelivered != st.Received-st.Acked {
					t.Errorf("%d messages came back with Attempt 1, want %d", redelivered, st.Received-st.Acked)
				}
			})
		})
	}
}

// TestStuckHandler: a handler that ignores cancellation makes Run return
// ErrStuckHandlers; its delivery is redelivered and never acked, even when
// the handler returns later; no goroutine is left once it does.
func TestStuckHandler(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		started.Add(1)
		<-release
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 2, SoftStopTimeout: 10 * time.Millisecond, HardStopTimeout: 20 * time.Millisecond},
		msgN(0, "a"), msgN(1, "a"), msgN(2, "b"))
	e.start()
	waitFor(t, "two handlers running", func() bool { return started.Load() == 2 })
	if err := e.stop(5 * time.Second); !errors.Is(err, consumer.ErrStuckHandlers) {
		t.Fatalf("Run returned %v, want ErrStuckHandlers", err)
	}
	if d, f := e.broker.Depth(e.source), e.broker.InFlight(e.source); d != 3 || f != 0 {
		t.Errorf("broker depth %d in flight %d, want 3 and 0", d, f)
	}
	close(release)
	waitFor(t, "abandoned events for the stuck handlers", func() bool { return e.rec.count(consumer.OutcomeAbandoned) >= 2 })
	if st := e.src.Stats(); st.Acked != 0 || st.Retried != 0 || st.DeadLettered != 0 {
		t.Errorf("settled after stop: %+v", st)
	}
	if d := e.broker.Depth(e.source); d != 3 {
		t.Errorf("broker depth %d, want 3", d)
	}
	if started.Load() != 2 {
		t.Errorf("%d handlers started, want 2 (the third was abandoned)", started.Load())
	}
}

// pauseCheckSource records Receive calls that start while the consumer's
// breaker is open.
type pauseCheckSource struct {
	consumer.Source
	c        *consumer.Consumer
	whileOff atomic.Int32
}

func (s *pauseCheckSource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	if s.c.Paused() {
		s.whileOff.Add(1)
	}
	return s.Source.Receive(ctx, n)
}

// TestOutage: Unavailable errors hold the delivery, open the breaker (intake
// pauses: Receive is not called) and close it after a success; nothing is
// retried on the broker or dead-lettered.
func TestOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.NewBroker()
		var down atomic.Bool
		down.Store(true)
		ok := newCounter()
		var failures atomic.Int32
		h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
			if down.Load() {
				failures.Add(1)
				return consumer.Unavailable(errors.New("database is down"))
			}
			ok.add(m.ID)
			return nil
		})
		counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
		src := &pauseCheckSource{Source: counting}
		rec := newRecorder()
		opened := make(chan struct{})
		var once sync.Once
		rec.onEvent = func(consumer.Event) {
			if len(rec.breakerChanges()) > 0 {
				once.Do(func() { close(opened) })
			}
		}
		c, err := consumer.New(src, h, consumer.Config{
			Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"),
			Name:       "test", Concurrency: 2, BreakerThreshold: 3, OutageBackoff: fastOutage, Retry: fastRetry(2), Logger: discard, Observer: rec,
		})
		if err != nil {
			t.Fatal(err)
		}
		src.c = c
		stop := startConsumer(t, c)
		publish := func(id string) {
			if err := broker.Publish(context.Background(), "src", &consumer.Message{ID: id, Key: id}); err != nil {
				t.Fatal(err)
			}
		}

		publish("m-0")
		select {
		case <-opened:
		case <-time.After(10 * time.Second):
			t.Fatal("breaker did not open")
		}
		if !c.Paused() {
			t.Fatal("Paused() is false with the breaker open")
		}
		// The Receive already waiting when the breaker opened returns m-1; no
		// new Receive starts while the breaker is open, so m-2 stays queued.
		publish("m-1")
		waitFor(t, "m-1 to be received", func() bool { return counting.Stats().Received == 2 })
		publish("m-2")
		for range 50 {
			time.Sleep(4 * time.Millisecond)
			if got := counting.Stats().Received; got != 2 {
				t.Fatalf("%d deliveries received while the breaker was open, want 2", got)
			}
		}
		if src.whileOff.Load() != 0 {
			t.Errorf("Receive called %d times with the breaker open", src.whileOff.Load())
		}

		down.Store(false)
		waitFor(t, "all three processed", func() bool { return counting.Stats().Acked == 3 })
		if c.Paused() {
			t.Error("breaker still open after successes")
		}
		stop()
		if got := rec.breakerChanges(); len(got) != 2 || !got[0] || got[1] {
			t.Errorf("breaker changes %v, want [true false]", got)
		}
		st := counting.Stats()
		if st.Retried != 0 || st.DeadLettered != 0 || len(broker.DeadLetters("src", "test")) != 0 || st.Acked != 3 || st.Double != 0 {
			t.Errorf("settlements %+v; an outage must neither retry nor dead-letter", st)
		}
		if f := failures.Load(); f < 3 {
			t.Errorf("%d failed attempts, want >= 3 (the threshold)", f)
		}
		if got := rec.count(consumer.OutcomeFailed); got != int(failures.Load()) {
			t.Errorf("%d failed events for %d outage failures", got, failures.Load())
		}
		for _, id := range []string{"m-0", "m-1", "m-2"} {
			if ok.get(id) != 1 {
				t.Errorf("%s processed %d times", id, ok.get(id))
			}
		}
	})
}

// TestSettlementFailure: a failed ack, retry or dead-letter publish leaves the
// original unsettled (nothing published) and is tried again without running
// the handler again.
func TestSettlementFailure(t *testing.T) {
	for _, tc := range []struct {
		op      memory.Op
		err     error // the handler's error on the first attempt
		outcome consumer.Outcome
	}{
		{memory.OpAck, nil, consumer.OutcomeProcessed},
		{memory.OpRetry, errors.New("transient"), consumer.OutcomeRetried},
		{memory.OpDeadLetter, consumer.Permanent(errors.New("bad")), consumer.OutcomeDeadLettered},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			calls := newCounter()
			h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
				if calls.add(m.ID) == 1 {
					return tc.err
				}
				return nil
			})
			e := newEnv(t, h, consumer.Config{Concurrency: 1, OutageBackoff: fastOutage, Retry: fastRetry(3)}, msgN(0, "k"))
			type snapshot struct{ depth, inFlight, dlq int }
			var mu sync.Mutex
			var snaps []snapshot
			e.rec.onEvent = func(ev consumer.Event) {
				if ev.Outcome == consumer.OutcomeFailed {
					mu.Lock()
					snaps = append(snaps, snapshot{e.broker.Depth("src"), e.broker.InFlight("src"), len(e.deadLetters())})
					mu.Unlock()
				}
			}
			// Two failed settlements while the broker is down (its probe
			// fails too): an outage, so the delivery is held.
			e.broker.InjectFaults(tc.op, 2)
			e.broker.InjectFaults(memory.OpProbe, 2)
			e.start()
			waitFor(t, "the outcome", func() bool { return e.rec.count(tc.outcome) >= 1 })
			if tc.op == memory.OpRetry {
				waitFor(t, "the retried copy to be acked", func() bool { return e.src.Stats().Acked == 1 })
			}
			if err := e.stop(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(snaps) != 2 {
				t.Fatalf("%d failed settlements reported, want 2", len(snaps))
			}
			for i, s := range snaps {
				if s != (snapshot{1, 1, 0}) {
					t.Errorf("after failed settlement %d: depth %d in flight %d dlq %d; want the original in flight and nothing published", i+1, s.depth, s.inFlight, s.dlq)
				}
			}
			wantCalls := 1
			if tc.op == memory.OpRetry {
				wantCalls = 2
			}
			if got := calls.get("m-00000"); got != wantCalls {
				t.Errorf("handler ran %d times, want %d", got, wantCalls)
			}
			if got := e.rec.count(tc.outcome); got != 1 {
				t.Errorf("%d %s events, want 1", got, tc.outcome)
			}
			wantDLQ := 0
			if tc.op == memory.OpDeadLetter {
				wantDLQ = 1
			}
			if got := len(e.deadLetters()); got != wantDLQ {
				t.Errorf("%d dead letters, want %d", got, wantDLQ)
			}
			if st := e.src.Stats(); st.Double != 0 || st.Outstanding != 0 {
				t.Errorf("settlements %+v", st)
			}
			if d := e.broker.Depth("src"); d != 0 {
				t.Errorf("depth %d, want 0", d)
			}
		})
	}
}

// TestReceiveErrors: a failing Receive is retried with backoff and nothing
// is lost.
func TestReceiveErrors(t *testing.T) {
	ok := newCounter()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		ok.add(m.ID)
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 2, OutageBackoff: fastOutage}, msgN(0, "a"), msgN(1, "b"))
	e.broker.InjectFaults(memory.OpReceive, 3)
	e.start()
	waitFor(t, "both messages", func() bool { return e.src.Stats().Acked == 2 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if ok.get("m-00000") != 1 || ok.get("m-00001") != 1 {
		t.Errorf("processed %v", ok.n)
	}
	if st := e.src.Stats(); st.ReceiveCalls < 4 {
		t.Errorf("%d Receive calls, want >= 4 (3 failed)", st.ReceiveCalls)
	}
}

// leasedSource hands out deliveries whose lease the test can revoke.
type leasedSource struct {
	consumer.Source
	lost chan struct{}
}

type leasedDelivery struct {
	consumer.Delivery
	lost chan struct{}
}

func (d leasedDelivery) Lost() <-chan struct{} { return d.lost }

func (s *leasedSource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	ds, err := s.Source.Receive(ctx, n)
	for i, d := range ds {
		ds[i] = leasedDelivery{Delivery: d, lost: s.lost}
	}
	return ds, err
}

// TestLeaseLost: when a delivery's lease is lost the handler's context is
// cancelled and the delivery is not settled, even if the handler succeeds.
func TestLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.NewBroker()
		if err := broker.Publish(context.Background(), "src", msgN(0, "a")); err != nil {
			t.Fatal(err)
		}
		counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
		src := &leasedSource{Source: counting, lost: make(chan struct{})}
		started := make(chan struct{})
		var sawCancel atomic.Bool
		h := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
			close(started)
			<-ctx.Done()
			sawCancel.Store(true)
			return nil // succeeds anyway: must not be acked
		})
		rec := newRecorder()
		c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: 1, Logger: discard, Observer: rec})
		if err != nil {
			t.Fatal(err)
		}
		stop := startConsumer(t, c)
		<-started
		close(src.lost)
		waitFor(t, "the abandoned event", func() bool { return rec.count(consumer.OutcomeAbandoned) == 1 })
		stop()
		if !sawCancel.Load() {
			t.Error("handler context not cancelled on lost lease")
		}
		if st := counting.Stats(); st.Acked+st.Retried+st.DeadLettered != 0 {
			t.Errorf("settled a delivery whose lease was lost: %+v", st)
		}
		if broker.Depth("src") != 1 {
			t.Errorf("depth %d, want 1", broker.Depth("src"))
		}
	})
}

// TestRetryAfter: RetryAfter's delay wins over a shorter policy delay.
func TestRetryAfter(t *testing.T) {
	const after = 150 * time.Millisecond
	var mu sync.Mutex
	var failedAt, retriedAt time.Time
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if m.Attempt == 1 {
			failedAt = time.Now()
			return consumer.RetryAfter(errors.New("rate limited"), after)
		}
		retriedAt = time.Now()
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 1, Retry: fastRetry(3)}, msgN(0, "a"))
	e.start()
	waitFor(t, "the retried copy", func() bool { return e.src.Stats().Acked == 1 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := retriedAt.Sub(failedAt); gap < after {
		t.Errorf("retried %s after the failure, before RetryAfter's %s", gap, after)
	}
	if got := e.rec.events[0]; got.Outcome != consumer.OutcomeRetried || got.RetryAfter < after {
		t.Errorf("first event %+v", got)
	}
}

// TestUnordered: Unordered runs messages of one key in parallel.
func TestUnordered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		var running, peak atomic.Int32
		gate := make(chan struct{})
		h := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
			defer running.Add(-1)
			raise(&peak, running.Add(1))
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return nil
		})
		msgs := msgsN(n, func(int) string { return "same" })
		e := newEnv(t, h, consumer.Config{Concurrency: 4, Ordering: consumer.Unordered}, msgs...)
		e.start()
		waitFor(t, "four handlers of one key at once", func() bool { return peak.Load() == 4 })
		close(gate)
		waitFor(t, "all acked", func() bool { return e.src.Stats().Acked == n })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRunOnce: Run twice fails; Stop before Run returns nil.
func TestRunOnce(t *testing.T) {
	e := newEnv(t, consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }), consumer.Config{})
	if err := e.c.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Run: %v", err)
	}
	e2 := newEnv(t, consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }), consumer.Config{})
	results := make(chan error, 2)
	for range 2 {
		go func() { results <- e2.c.Run(context.Background()) }()
	}
	if err := <-results; err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Run: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e2.c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-results; err != nil {
		t.Fatal(err)
	}
}

// greedySource returns one more delivery than asked, an adapter bug the
// runtime must survive without exceeding MaxInFlight.
type greedySource struct{ consumer.Source }

func (s greedySource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	return s.Source.Receive(ctx, n+1)
}

func TestSourceReturnsMoreThanAsked(t *testing.T) {
	const n, limit = 50, 4
	broker := memory.NewBroker()
	msgs := msgsN(n, func(i int) string { return fmt.Sprint(i) })
	if err := broker.Publish(context.Background(), "src", msgs...); err != nil {
		t.Fatal(err)
	}
	var running, peak atomic.Int32
	ok := newCounter()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		defer running.Add(-1)
		raise(&peak, running.Add(1))
		time.Sleep(100 * time.Microsecond)
		ok.add(m.ID)
		return nil
	})
	counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
	c, err := consumer.New(greedySource{counting}, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: limit, MaxInFlight: limit, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	stop := startConsumer(t, c)
	waitFor(t, "every message", func() bool { return counting.Stats().Acked == n })
	stop()
	if ok.distinct() != n || counting.Stats().Double != 0 {
		t.Errorf("processed %d distinct, stats %+v", ok.distinct(), counting.Stats())
	}
	if p := peak.Load(); p > limit {
		t.Errorf("%d handlers ran at once, MaxInFlight %d", p, limit)
	}
}

// partitionedSource claims partitions so OrderByPartition is accepted.
type partitionedSource struct{ consumer.Source }

func (partitionedSource) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "memory", Partitioned: true}
}

// TestSequentialLanes: OrderByPartition, and OrderByKey for messages without
// a key, run one partition's messages one at a time in order.
func TestSequentialLanes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ordering consumer.Ordering
		key      func(i int) string
	}{
		{"OrderByPartition", consumer.OrderByPartition, func(i int) string { return fmt.Sprint(i) }},
		{"EmptyKey", consumer.OrderByKey, func(int) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 200
				broker := memory.NewBroker()
				msgs := msgsN(n, tc.key)
				if err := broker.Publish(context.Background(), "src", msgs...); err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var order []int
				var running, peak atomic.Int32
				h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
					defer running.Add(-1)
					raise(&peak, running.Add(1))
					i, _ := strconv.Atoi(string(m.Body))
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					return nil
				})
				counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
				c, err := consumer.New(partitionedSource{counting}, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: 8, Ordering: tc.ordering, Logger: discard})
				if err != nil {
					t.Fatal(err)
				}
				stop := startConsumer(t, c)
				waitFor(t, "every message", func() bool { return counting.Stats().Acked == n })
				stop()
				if p := peak.Load(); p != 1 {
					t.Errorf("%d handlers of one partition ran at once", p)
				}
				for i, got := range order {
					if got != i {
						t.Fatalf("handled %d at position %d", got, i)
					}
				}
			})
		})
	}
}

// ctxLeasedSource hands out deliveries that hold the test's current lease
// as a context (consumer.LeaseContexter), like Kafka partitions do.
type ctxLeasedSource struct {
	consumer.Source
	mu     sync.Mutex
	lease  context.Context
	revoke context.CancelFunc
}

type ctxLeasedDelivery struct {
	consumer.Delivery
	lease context.Context
}

func (d ctxLeasedDelivery) Lost() <-chan struct{}         { return d.lease.Done() }
func (d ctxLeasedDelivery) LeaseContext() context.Context { return d.lease }

// renew starts a new lease for the deliveries received from now on.
func (s *ctxLeasedSource) renew() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lease, s.revoke = context.WithCancel(context.Background())
}

func (s *ctxLeasedSource) current() (context.Context, context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease, s.revoke
}

func (s *ctxLeasedSource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	ds, err := s.Source.Receive(ctx, n)
	lease, _ := s.current()
	for i, d := range ds {
		ds[i] = ctxLeasedDelivery{Delivery: d, lease: lease}
	}
	return ds, err
}

// TestSharedLeaseState: deliveries of one lease share the worker's attempt
// state, yet a lost lease cancels the running handler and abandons the
// deliveries of that lease still queued, a later lease's deliveries run
// under a live context, and MarkDuplicate counts for its own attempt only.
func TestSharedLeaseState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.NewBroker()
		counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
		src := &ctxLeasedSource{Source: counting}
		src.renew()
		first, _ := src.current()
		blocked := make(chan struct{})
		var liveAfter atomic.Int32
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			switch m.ID {
			case "dup-0", "dup-2":
				consumer.MarkDuplicate(ctx)
			case "block":
				close(blocked)
				<-ctx.Done()
				return nil // must not be acked: the lease is gone
			case "late-0", "late-1":
				if ctx.Err() == nil {
					liveAfter.Add(1)
				}
			}
			return nil
		})
		rec := newRecorder()
		c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: 1, Logger: discard, Observer: rec})
		if err != nil {
			t.Fatal(err)
		}
		ids := func(ids ...string) []*consumer.Message {
			ms := make([]*consumer.Message, len(ids))
			for i, id := range ids {
				ms[i] = &consumer.Message{ID: id, Key: "k"}
			}
			return ms
		}
		if err := broker.Publish(context.Background(), "src", ids("dup-0", "plain-1", "dup-2", "plain-3")...); err != nil {
			t.Fatal(err)
		}
		stop := startConsumer(t, c)
		waitFor(t, "the first four settled", func() bool { return counting.Stats().Acked == 4 })
		if d, p := rec.count(consumer.OutcomeDuplicate), rec.count(consumer.OutcomeProcessed); d != 2 || p != 2 {
			t.Fatalf("duplicates %d, processed %d; want 2 and 2", d, p)
		}

		// One delivery blocks until the lease is revoked; the next of the same
		// lease must not run.
		if err := broker.Publish(context.Background(), "src", ids("block", "queued")...); err != nil {
			t.Fatal(err)
		}
		<-blocked
		_, revoke := src.current()
		src.renew()
		revoke()
		waitFor(t, "both abandoned", func() bool { return rec.count(consumer.OutcomeAbandoned) == 2 })
		if first.Err() == nil {
			t.Fatal("first lease still live")
		}

		if err := broker.Publish(context.Background(), "src", ids("late-0", "late-1")...); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the late deliveries acked", func() bool { return counting.Stats().Acked == 6 })
		stop()
		if n := liveAfter.Load(); n != 2 {
			t.Errorf("%d of 2 handlers under the new lease saw a live context", n)
		}
		if st := counting.Stats(); st.Acked != 6 || st.Double != 0 {
			t.Errorf("stats %+v, want 6 acked", st)
		}
		if d := rec.count(consumer.OutcomeDuplicate); d != 2 {
			t.Errorf("%d duplicates, want 2", d)
		}
	})
}

// TestDuplicatePerAttempt: a worker reuses its attempt state, and
// MarkDuplicate still counts for the attempt that called it only.
func TestDuplicatePerAttempt(t *testing.T) {
	const n = 20
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		if strings.HasSuffix(m.ID, "0") {
			consumer.MarkDuplicate(ctx)
		}
		return nil
	})
	rec := newRecorder()
	msgs := msgsN(n, func(int) string { return "k" })
	e := newEnv(t, h, consumer.Config{Concurrency: 1, Observer: rec}, msgs...)
	e.start()
	waitFor(t, "every message", func() bool {
		return rec.count(consumer.OutcomeProcessed)+rec.count(consumer.OutcomeDuplicate) == n
	})
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if d := rec.count(consumer.OutcomeDuplicate); d != 2 {
		t.Errorf("%d duplicates, want 2 (m-0 and m-10)", d)
	}
}

// capped returns at most perCall deliveries per Receive, like a broker whose
// prefetch trickles in.
type capped struct {
	consumer.Source
	perCall int
}

func (s capped) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	return s.Source.Receive(ctx, min(max, s.perCall))
}

// TestPrefetchWhileHandlersBlock: while every worker is blocked in a slow
// handler, intake still fills the window up to MaxInFlight, and no further —
// whether a Receive returns one delivery, or more than there are workers (so
// that some wait in the run queue while every worker blocks).
func TestPrefetchWhileHandlersBlock(t *testing.T) {
	for _, perCall := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d per receive", perCall), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				testPrefetchWhileHandlersBlock(t, perCall)
			})
		})
	}
}

func testPrefetchWhileHandlersBlock(t *testing.T, perCall int) {
	const n, workers, inFlight = 12, 2, 6
	broker := memory.NewBroker()
	msgs := msgsN(n, func(i int) string { return fmt.Sprint(i) })
	if err := broker.Publish(context.Background(), "src", msgs...); err != nil {
		t.Fatal(err)
	}
	counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
	release := make(chan struct{})
	var running atomic.Int32
	h := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	c, err := consumer.New(capped{counting, perCall}, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: workers, MaxInFlight: inFlight, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	stop := startConsumer(t, c)
	waitFor(t, "a full window with every worker blocked", func() bool {
		return running.Load() == workers && counting.Stats().Outstanding == inFlight
	})
	time.Sleep(20 * time.Millisecond) // fake: several prefetch delays, intake must stay stopped
	if st := counting.Stats(); st.Received != inFlight {
		t.Fatalf("received %d while the handlers block, want %d (MaxInFlight)", st.Received, inFlight)
	}
	close(release)
	waitFor(t, "every message", func() bool { return counting.Stats().Acked == n })
	stop()
	if st := counting.Stats(); st.MaxOutstanding > inFlight || st.Double != 0 {
		t.Errorf("stats %+v: over MaxInFlight or settled twice", st)
	}
}

// scriptedSource returns first on its first Receive; its second Receive
// signals entered, waits for ctx to end and then returns late (deliveries a
// source had already fetched when intake stopped). Later calls wait for ctx.
type scriptedSource struct {
	first, late []consumer.Delivery
	calls       atomic.Int32
	entered     chan struct{}
	acked       atomic.Int32
}

func (s *scriptedSource) Receive(ctx context.Context, _ int) ([]consumer.Delivery, error) {
	switch s.calls.Add(1) {
	case 1:
		return s.first, nil
	case 2:
		close(s.entered)
		<-ctx.Done()
		return s.late, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *scriptedSource) Close(context.Context) error { return nil }

func (s *scriptedSource) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "scripted"}
}

type scriptedDelivery struct {
	s *scriptedSource
	m *consumer.Message
}

func (d scriptedDelivery) Message() *consumer.Message { return d.m }
func (d scriptedDelivery) Ack(context.Context) error {
	d.s.acked.Add(1)
	return nil
}
func (d scriptedDelivery) Retry(context.Context, time.Duration, map[string]string) error { return nil }
func (d scriptedDelivery) DeadLetter(context.Context, map[string]string) error           { return nil }

// TestLateDeliveriesDuringStop: deliveries that the intake running beside
// busy workers (prefetch) receives while the stop begins, when every worker
// has gone idle, are still run and settled before Run returns.
func TestLateDeliveriesDuringStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &scriptedSource{entered: make(chan struct{})}
		for i := range 2 {
			src.first = append(src.first, scriptedDelivery{s: src, m: msgN(i, fmt.Sprint(i))})
		}
		for i := 2; i < 5; i++ {
			src.late = append(src.late, scriptedDelivery{s: src, m: msgN(i, fmt.Sprint(i))})
		}
		gate := make(chan struct{})
		var started atomic.Int32
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if m.ID == "m-00000" || m.ID == "m-00001" {
				started.Add(1)
				<-gate
			}
			return nil
		})
		c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: 2, Logger: discard,
			SoftStopTimeout: 2 * time.Second, HardStopTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		stop := startConsumer(t, c)
		waitFor(t, "both workers busy", func() bool { return started.Load() == 2 })
		<-src.entered // prefetch receives beside the busy workers
		close(gate)
		waitFor(t, "the first deliveries acked", func() bool { return src.acked.Load() == 2 })
		stop()
		if got := src.acked.Load(); got != 5 {
			t.Errorf("%d deliveries acked, want 5", got)
		}
	})
}

// TestTakenTasksGoBackWhenAHandlerIsSlow: a worker takes several waiting
// deliveries at once while handlers are fast; when one of them blocks, the
// others it took are handed to idle workers instead of waiting behind it.
func TestTakenTasksGoBackWhenAHandlerIsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10
		release := make(chan struct{})
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if m.ID == "m-00000" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
		msgs := msgsN(n, func(i int) string { return fmt.Sprint(i) })
		e := newEnv(t, h, consumer.Config{Concurrency: 2}, msgs...)
		e.start()
		waitFor(t, "every delivery but the blocked one acked", func() bool { return e.src.Stats().Acked == n-1 })
		close(release)
		waitFor(t, "all acked", func() bool { return e.src.Stats().Acked == n })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSoloRunHandsOver: a worker that received a batch while nothing else
// was in flight runs it alone, without lanes. When its handler blocks, the
// deliveries it has not started go to idle workers with their lanes (the
// blocked key's later messages wait behind it), and a batch another worker
// receives meanwhile waits behind the blocked key too; every other key
// runs beside it.
func TestSoloRunHandsOver(t *testing.T) {
	// a0 blocks; the ids name key and sequence.
	type step struct {
		id    string
		start bool // else end
	}
	run := func(t *testing.T, first []string, later []string, beside []string) {
		var mu sync.Mutex
		var log []step
		started := make(chan struct{})
		release := make(chan struct{})
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			mu.Lock()
			log = append(log, step{m.ID, true})
			mu.Unlock()
			if m.ID == "a0" {
				close(started)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			mu.Lock()
			log = append(log, step{m.ID, false})
			mu.Unlock()
			return nil
		})
		msgs := func(ids []string) []*consumer.Message {
			ms := make([]*consumer.Message, len(ids))
			for i, id := range ids {
				ms[i] = &consumer.Message{ID: id, Key: id[:1], Body: []byte(id)}
			}
			return ms
		}
		e := newEnv(t, h, consumer.Config{Concurrency: 4}, msgs(first)...)
		e.start()
		<-started
		e.publish(msgs(later)...)
		ended := func(ids []string) bool {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, s := range log {
				if !s.start && slices.Contains(ids, s.id) {
					n++
				}
			}
			return n == len(ids)
		}
		waitFor(t, "the other keys handled beside the blocked one", func() bool { return ended(beside) })
		mu.Lock()
		for _, s := range log {
			if s.id[0] == 'a' && s.id != "a0" {
				t.Errorf("%s started while a0 was blocked", s.id)
			}
		}
		mu.Unlock()
		close(release)
		total := len(first) + len(later)
		waitFor(t, "every message acked", func() bool { return e.src.Stats().Acked == total })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		// Per key: each message starts after the one before it ended.
		mu.Lock()
		defer mu.Unlock()
		lastEnd := map[byte]string{}
		running := map[byte]string{}
		for _, s := range log {
			k := s.id[0]
			if s.start {
				if r := running[k]; r != "" {
					t.Errorf("%s started while %s of its key ran", s.id, r)
				}
				if prev := lastEnd[k]; prev != "" && prev >= s.id {
					t.Errorf("%s started after %s: out of order", s.id, prev)
				}
				running[k] = s.id
				continue
			}
			running[k], lastEnd[k] = "", s.id
		}
		if st := e.src.Stats(); st.Acked != total || st.Double != 0 {
			t.Errorf("settlements %+v, want %d acks", st, total)
		}
	}
	// a0's worker is taken back from: its solo run's unstarted deliveries
	// get lanes in arrival order.
	t.Run("TakenBack", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run(t, []string{"a0", "a1", "b0", "a2", "c0", "b1"}, nil, []string{"b0", "c0", "b1"})
		})
	})
	// Another worker receives while a0 runs: a0 gets its lane first.
	t.Run("OtherIntake", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run(t, []string{"a0"}, []string{"a1", "b0", "a2", "c0"}, []string{"b0", "c0"})
		})
	})
	// a0 blocks in the solo run's fourth claim, [7, 15), after seven fast
	// deliveries: the deliveries claimed with it (a1 and a2 among them)
	// stay behind it on its worker and hold their keys' lanes; the
	// unclaimed ones are taken back, a3 and b2 queued behind those lanes,
	// f0 and g0 run beside.
	t.Run("ClaimedWithIt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			first := []string{"p0", "q0", "r0", "s0", "t0", "u0", "v0",
				"a0", "b0", "a1", "c0", "b1", "d0", "a2", "e0",
				"a3", "f0", "b2", "g0"}
			run(t, first, nil, []string{"f0", "g0"})
		})
	})
}

// TestSoloRunSpreads: handlers of a few hundred microseconds keep a solo
// run progressing steadily, yet a batch one worker cannot finish within a
// few help periods is spread over idle workers.
func TestSoloRunSpreads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, batch = 128, 64 // Concurrency 8: MaxInFlight and ReceiveBatch 64
		var mu sync.Mutex
		ranOn := make(map[context.Context]bool) // the first batch's workers, by their attempt context
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if i, _ := strconv.Atoi(string(m.Body)); i < batch {
				mu.Lock()
				ranOn[ctx] = true
				mu.Unlock()
			}
			// 200 µs of the bubble's fake clock: the help timer fires at
			// fixed points of the run, whatever the machine's load.
			time.Sleep(200 * time.Microsecond)
			return nil
		})
		e := newEnv(t, h, consumer.Config{Concurrency: 8}, msgsN(n, func(i int) string { return fmt.Sprint(i) })...)
		e.start()
		waitFor(t, "every message acked", func() bool { return e.src.Stats().Acked == n })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ranOn) < 2 {
			t.Errorf("the first batch (%d deliveries of 200 µs) ran on %d worker(s); want it spread", batch, len(ranOn))
		}
	})
}

// TestDoneLeaseNotRun: deliveries whose LeaseContext is done before they
// start (a Kafka record an in-place retry abandoned, a revoked partition)
// are abandoned without running their handler or being settled.
func TestDoneLeaseNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.NewBroker()
		counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
		src := &ctxLeasedSource{Source: counting}
		src.renew()
		_, revoke := src.current()
		revoke()
		var ran atomic.Int32
		h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
			ran.Add(1)
			return nil
		})
		rec := newRecorder()
		c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: 2, Logger: discard, Observer: rec})
		if err != nil {
			t.Fatal(err)
		}
		if err := broker.Publish(context.Background(), "src", msgsN(3, func(int) string { return "k" })...); err != nil {
			t.Fatal(err)
		}
		stop := startConsumer(t, c)
		waitFor(t, "three outcomes", func() bool {
			return rec.count(consumer.OutcomeAbandoned)+rec.count(consumer.OutcomeProcessed) == 3
		})
		stop()
		if n := rec.count(consumer.OutcomeAbandoned); n != 3 {
			t.Errorf("%d of 3 abandoned", n)
		}
		if n := ran.Load(); n != 0 {
			t.Errorf("%d handlers ran under a done lease", n)
		}
		if st := counting.Stats(); st.Acked+st.Retried+st.DeadLettered != 0 {
			t.Errorf("settled deliveries of a done lease: %+v", st)
		}
	})
}

// TestUnobserved runs the settlement paths without an Observer (the one
// attempt path, with no handler timing):
// success, an outage held and tried again in place, a broker retry, a
// permanent error, attempts exhausted, a panic, and a MarkDuplicate that
// must not leak into the next attempt.
func TestUnobserved(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("concurrency=%d", workers), func(t *testing.T) {
			broker := memory.NewBroker()
			calls := newCounter()
			h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
				n := calls.add(m.ID)
				switch m.ID {
				case "outage":
					if n < 3 {
						return consumer.Unavailable(errors.New("database is down"))
					}
				case "retry":
					if m.Attempt < 2 {
						return errors.New("flaky")
					}
				case "permanent":
					return consumer.Permanent(errors.New("malformed"))
				case "poison":
					return errors.New("always fails")
				case "panic":
					panic("boom")
				case "dup":
					consumer.MarkDuplicate(ctx)
				default:
					if consumer.IsDuplicate(ctx) {
						return consumer.Permanent(errors.New("an earlier attempt's duplicate mark leaked"))
					}
				}
				return nil
			})
			ids := []string{"dup", "ok", "outage", "retry", "permanent", "poison", "panic", "after-dup"}
			msgs := make([]*consumer.Message, len(ids))
			for i, id := range ids {
				msgs[i] = &consumer.Message{ID: id, Key: id}
			}
			if err := broker.Publish(context.Background(), "src", msgs...); err != nil {
				t.Fatal(err)
			}
			c, err := consumer.New(broker.NewSource("src", "test"), h, consumer.Config{
				Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"),
				Name:       "test", Concurrency: workers, OutageBackoff: fastOutage, Retry: fastRetry(2), Logger: discard,
			})
			if err != nil {
				t.Fatal(err)
			}
			stop := startConsumer(t, c)
			waitFor(t, "every message settled", func() bool { return broker.Depth("src") == 0 })
			stop()

			want := map[string]int{"dup": 1, "ok": 1, "outage": 3, "retry": 2, "permanent": 1, "poison": 2, "panic": 2, "after-dup": 1}
			for id, n := range want {
				if got := calls.get(id); got != n {
					t.Errorf("%s handled %d times, want %d", id, got, n)
				}
			}
			reasons := map[string]string{}
			for _, m := range broker.DeadLetters("src", "test") {
				reasons[m.ID] = m.Header(consumer.HeaderDeadLetterReason)
			}
			wantDL := map[string]string{"permanent": consumer.ReasonPermanent, "poison": consumer.ReasonExhausted, "panic": consumer.ReasonPanic}
			if !maps.Equal(reasons, wantDL) {
				t.Errorf("dead letters %v, want %v", reasons, wantDL)
			}
		})
	}
}

// TestWorkersStartOnDemand: worker goroutines start as work finds no idle
// worker; with every handler blocked, Concurrency of them run at once,
// never more.
func TestWorkersStartOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers = 4
		var running, most atomic.Int32
		release := make(chan struct{})
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			defer running.Add(-1)
			raise(&most, running.Add(1))
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
		const n = 3 * workers
		e := newEnv(t, h, consumer.Config{Concurrency: workers}, msgsN(n, func(i int) string { return fmt.Sprint(i) })...)
		e.start()
		waitFor(t, "every worker in a blocked handler", func() bool { return running.Load() == workers })
		close(release)
		waitFor(t, "every message acked", func() bool { return e.src.Stats().Acked == n })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if got := most.Load(); got != workers {
			t.Errorf("at most %d handlers ran at once, want %d", got, workers)
		}
	})
}
