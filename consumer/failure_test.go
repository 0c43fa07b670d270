package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// dependency is a Prober a test turns down and up.
type dependency struct {
	down   atomic.Bool
	probes atomic.Int32
}

func (p *dependency) Probe(context.Context) error {
	p.probes.Add(1)
	if p.down.Load() {
		return errors.New("dependency down")
	}
	return nil
}

// faultSource wraps a memory source: its deliveries' Retry fails with
// retryErr while it is set, it probes as broker (nil: not a Prober), and
// maxDelay overrides the capability.
type faultSource struct {
	*adaptertest.CountingSource
	broker   *dependency
	maxDelay time.Duration
	trimmed  bool

	mu       sync.Mutex
	retryErr error
	afters   []time.Duration
}

func (s *faultSource) Capabilities() consumer.Capabilities {
	caps := s.CountingSource.Capabilities()
	caps.MaxDelay = s.maxDelay
	return caps
}

func (s *faultSource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	ds, err := s.CountingSource.Receive(ctx, n)
	for i, d := range ds {
		ds[i] = &faultDelivery{Delivery: d, s: s}
	}
	return ds, err
}

func (s *faultSource) setRetryErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retryErr = err
}

func (s *faultSource) retryAfters() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.afters...)
}

type faultDelivery struct {
	consumer.Delivery
	s *faultSource
}

func (d *faultDelivery) Retry(ctx context.Context, after time.Duration, h map[string]string) error {
	d.s.mu.Lock()
	d.s.afters = append(d.s.afters, after)
	err := d.s.retryErr
	d.s.mu.Unlock()
	if err != nil {
		return err
	}
	return d.Delivery.Retry(ctx, after, h)
}

func (d *faultDelivery) CopyTrimmed() bool { return d.s.trimmed }

// proberSource is a faultSource that is a Prober.
type proberSource struct{ *faultSource }

func (s proberSource) Probe(ctx context.Context) error { return s.broker.Probe(ctx) }

func newFaultEnv(t *testing.T, h consumer.Handler, cfg consumer.Config, probed bool, msgs ...*consumer.Message) (*env, *faultSource) {
	t.Helper()
	e := &env{t: t, broker: memory.NewBroker(), source: "src", rec: newRecorder()}
	e.publish(msgs...)
	e.src = adaptertest.NewCountingSource(e.broker.NewSource(e.source, "test"))
	fs := &faultSource{CountingSource: e.src, broker: &dependency{}}
	var src consumer.Source = fs
	if probed {
		src = proberSource{fs}
	}
	cfg.Name, cfg.Logger, cfg.Observer = "test", discard, e.rec
	if cfg.OutageBackoff.InitialInterval == 0 {
		cfg.OutageBackoff = fastOutage
	}
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	c, err := consumer.New(src, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e, fs
}

// TestInvalidIDsAtTheDoor: IDs a database rejects (not UTF-8, NUL or other
// control characters) are dead-lettered with reason invalid-id before any
// attempt, and the rest of the batch proceeds. Catches: an ID checked only
// for length, which a Postgres claim turns into an endless outage.
func TestInvalidIDsAtTheDoor(t *testing.T) {
	invalid := []string{"nul\x00id", "bad\xffutf8", "ctl\x01id", "del\x7fid", "c1\u0085id", "tab\tid", strings.Repeat("x", 257)}
	valid := []string{"ok-1", "zahlung-ü-€-1", "space ok"}
	var msgs []*consumer.Message
	for i, id := range append(append([]string(nil), invalid...), valid...) {
		msgs = append(msgs, &consumer.Message{ID: id, Key: fmt.Sprint(i), Body: []byte(id)})
	}
	calls := newCounter()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		calls.add(m.ID)
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 2}, msgs...)
	e.start()
	waitFor(t, "every message settled", func() bool { return e.src.Stats().Acked == len(valid) && len(e.deadLetters()) == len(invalid) })
	if err := e.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, id := range valid {
		if calls.get(id) != 1 {
			t.Errorf("valid ID %q handled %d times, want 1", id, calls.get(id))
		}
	}
	if calls.distinct() != len(valid) {
		t.Errorf("handler saw %v, want only the valid IDs", calls.n)
	}
	for _, dl := range e.deadLetters() {
		if r := dl.Header(consumer.HeaderDeadLetterReason); r != consumer.ReasonInvalidID {
			t.Errorf("dead letter %q: reason %q, want invalid-id", dl.ID, r)
		}
		if dl.ID != string(dl.Body) || dl.Header(consumer.HeaderError) == "" {
			t.Errorf("dead letter %q lost its ID or error: %v", dl.Body, dl.Headers)
		}
	}
}

// TestDependencyAnswersMeansMessageFault: an Unavailable failure whose
// dependency answers its probe is this message's: retried, then
// dead-lettered as exhausted; the breaker never opens. Catches: outage
// decided by the error's type (a rejected claim held forever).
func TestDependencyAnswersMeansMessageFault(t *testing.T) {
	db := &dependency{}
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		return consumer.UnavailableFrom(errors.New("connection killed by the server"), db)
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 1, BreakerThreshold: 1, OutageBackoff: fastOutage, Retry: fastRetry(3)}, msgN(0, "a"))
	e.start()
	waitFor(t, "the dead letter", func() bool { return len(e.deadLetters()) == 1 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	dl := e.deadLetters()[0]
	if dl.Header(consumer.HeaderDeadLetterReason) != consumer.ReasonExhausted || dl.Header(consumer.HeaderAttempt) != "3" {
		t.Errorf("dead letter headers %v, want exhausted after 3 attempts", dl.Headers)
	}
	if got := e.rec.count(consumer.OutcomeRetried); got != 2 {
		t.Errorf("%d retries, want 2", got)
	}
	if got := e.rec.breakerChanges(); len(got) != 0 {
		t.Errorf("breaker changed %v; a failure whose dependency answers is no outage", got)
	}
	if db.probes.Load() != 3 {
		t.Errorf("%d probes, want one per failed attempt (3)", db.probes.Load())
	}
}

// TestDownFromIsAnOutageWhateverTheProbe: a failure that shows its
// dependency down (DownFrom: a refused connection) is an outage although the
// dependency answers by the time it is probed — it came back in between —
// so the message is held and tried again, never retried on the broker or
// charged an attempt. Catches: the runtime letting a late probe's success
// make a refused connection the message's fault (a database restart then
// dead-letters messages).
func TestDownFromIsAnOutageWhateverTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := &dependency{} // answers every probe
		var calls atomic.Int32
		h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
			if calls.Add(1) <= 2 {
				return consumer.DownFrom(errors.New("connection refused"), db)
			}
			return nil
		})
		e := newEnv(t, h, consumer.Config{Concurrency: 1, BreakerThreshold: 5, OutageBackoff: fastOutage, Retry: fastRetry(2)}, msgN(0, "a"))
		e.start()
		waitFor(t, "the message to be processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == 1 })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if got := e.rec.count(consumer.OutcomeRetried); got != 0 {
			t.Errorf("%d broker retries, want 0: the failures were an outage", got)
		}
		if got := len(e.deadLetters()); got != 0 {
			t.Errorf("%d dead letters, want 0", got)
		}
		if got := e.rec.count(consumer.OutcomeFailed); got != 2 {
			t.Errorf("%d held failures, want 2", got)
		}
		if got := calls.Load(); got != 3 {
			t.Errorf("%d handler calls, want 3 (two held, one success)", got)
		}
	})
}

// TestBreakerResumesWithoutHeldDelivery: the breaker opened by an outage
// closes by probing once the dependency is back, although every held
// delivery lost its lease meanwhile (nothing left to succeed); a plain
// Unavailable error (nothing to probe) closes it once no delivery is held.
// Catches: a breaker that only a held delivery's success closes.
func TestBreakerResumesWithoutHeldDelivery(t *testing.T) {
	for _, probed := range []bool{true, false} {
		t.Run(fmt.Sprintf("probed=%v", probed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db := &dependency{}
				db.down.Store(true)
				processed := newCounter()
				h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
					if db.down.Load() {
						if probed {
							return consumer.UnavailableFrom(errors.New("database down"), db)
						}
						return consumer.Unavailable(errors.New("database down"))
					}
					processed.add(m.ID)
					return nil
				})
				broker := memory.NewBroker()
				counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
				src := &leasedSource{Source: counting, lost: make(chan struct{})}
				rec := newRecorder()
				c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: 1, BreakerThreshold: 1, OutageBackoff: fastOutage, Logger: discard, Observer: rec})
				if err != nil {
					t.Fatal(err)
				}
				stop := startConsumer(t, c)
				if err := broker.Publish(context.Background(), "src", msgN(0, "a")); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the breaker to open", c.Paused)
				close(src.lost) // the held delivery's lease ends: nothing is left to try
				waitFor(t, "the held delivery to be abandoned", func() bool { return rec.count(consumer.OutcomeAbandoned) == 1 })
				if probed {
					// Still down: the breaker stays open however long it probes.
					before := db.probes.Load()
					waitFor(t, "two more probes", func() bool { return db.probes.Load() >= before+2 })
					if !c.Paused() {
						t.Fatal("breaker closed while its dependency is down")
					}
				}
				db.down.Store(false)
				waitFor(t, "the breaker to close", func() bool { return !c.Paused() })
				src.lost = make(chan struct{}) // later deliveries keep their lease
				if err := broker.Publish(context.Background(), "src", msgN(1, "b")); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "a new message to be processed", func() bool { return processed.get("m-00001") == 1 })
				stop()
				if got := rec.breakerChanges(); len(got) != 2 || !got[0] || got[1] {
					t.Errorf("breaker changes %v, want [true false]", got)
				}
				if broker.Depth("src") != 1 || len(broker.DeadLetters("src", "test")) != 0 {
					t.Errorf("depth %d, dead letters %d: the abandoned delivery must be back on the queue, nothing dead-lettered", broker.Depth("src"), len(broker.DeadLetters("src", "test")))
				}
			})
		})
	}
}

// TestNoBatchPassesOpenBreaker: deliveries that the Receive already waiting
// when the breaker opened returns are held until it closes, not handled.
// Catches: a breaker checked only before Receive.
func TestNoBatchPassesOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		calls := newCounter()
		var e *env
		h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
			if calls.add(m.ID) == 1 && m.ID == "m-00000" {
				// Fail only once the next Receive waits, so the breaker opens
				// under it.
				for i := 0; i < 5000 && e.src.Stats().ReceiveCalls < 2; i++ {
					time.Sleep(time.Millisecond)
				}
			}
			if down.Load() {
				return consumer.Unavailable(errors.New("down"))
			}
			return nil
		})
		e = newEnv(t, h, consumer.Config{Concurrency: 2, BreakerThreshold: 1, OutageBackoff: fastOutage}, msgN(0, "a"))
		e.start()
		waitFor(t, "the breaker to open", e.c.Paused)
		e.publish(msgN(1, "b"))
		waitFor(t, "m-1 to be received", func() bool { return e.src.Stats().Received == 2 })
		for range 50 {
			time.Sleep(2 * time.Millisecond)
			if calls.get("m-00001") != 0 {
				t.Fatal("m-1 was handled while the breaker was open")
			}
		}
		down.Store(false)
		waitFor(t, "both processed", func() bool { return e.src.Stats().Acked == 2 })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if calls.get("m-00001") != 1 {
			t.Errorf("m-1 handled %d times, want 1", calls.get("m-00001"))
		}
	})
}

// TestRetryCopyRefused: a retry copy the broker refuses for good, or keeps
// failing while the broker answers, dead-letters the message with reason
// retry-refused instead of looping; while the broker is down the delivery
// is held and the breaker opens. Catches: every settlement failure taken
// for an outage and tried forever.
func TestRetryCopyRefused(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		probed     bool
		wantRetrys int // Retry calls before the dead letter
	}{
		{"refused", fmt.Errorf("record too large: %w", consumer.ErrCopyRefused), false, 1},
		{"broker answers", errors.New("publish failed"), true, 3}, // attempts 1, 2 and 3 of 4
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return errors.New("handler failed") })
			e, fs := newFaultEnv(t, h, consumer.Config{Concurrency: 1, BreakerThreshold: 1, Retry: fastRetry(4)}, tc.probed, msgN(0, "a"))
			fs.setRetryErr(tc.err)
			e.start()
			waitFor(t, "the dead letter", func() bool { return len(e.deadLetters()) == 1 })
			if err := e.stop(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			dl := e.deadLetters()[0]
			if r := dl.Header(consumer.HeaderDeadLetterReason); r != consumer.ReasonRetryRefused {
				t.Errorf("reason %q, want retry-refused", r)
			}
			if e := dl.Header(consumer.HeaderError); !strings.Contains(e, "handler failed") || !strings.Contains(e, "retry copy refused") {
				t.Errorf("error header %q lacks the handler's error and the refusal", e)
			}
			if got := len(fs.retryAfters()); got != tc.wantRetrys {
				t.Errorf("%d Retry calls, want %d", got, tc.wantRetrys)
			}
			if got := e.rec.breakerChanges(); len(got) != 0 {
				t.Errorf("breaker changed %v; a refused copy is no outage", got)
			}
			if st := e.src.Stats(); st.DeadLettered != 1 || st.Retried != 0 || st.Double != 0 || e.broker.Depth("src") != 0 {
				t.Errorf("settlements %+v, depth %d", st, e.broker.Depth("src"))
			}
		})
	}
	// Catches: a copy whose destination node is down (a refused dial) while
	// the Source's node answers, counted as the message's attempts and
	// dead-lettered as retry-refused during a failover.
	t.Run("destination unreachable", func(t *testing.T) {
		h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
			if m.Attempt == 1 {
				return errors.New("handler failed")
			}
			return nil
		})
		e, fs := newFaultEnv(t, h, consumer.Config{Concurrency: 1, BreakerThreshold: 1, Retry: fastRetry(2)}, true, msgN(0, "a"))
		fs.setRetryErr(fmt.Errorf("publishing the retry copy: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}))
		e.start()
		waitFor(t, "four Retry tries, more than the policy's attempts", func() bool { return len(fs.retryAfters()) >= 4 })
		if n := len(e.deadLetters()); n != 0 {
			t.Fatalf("%d dead letters while only the destination was unreachable", n)
		}
		if e.c.Paused() {
			t.Error("breaker open although the source answers")
		}
		fs.setRetryErr(nil)
		waitFor(t, "the retried copy to be processed", func() bool { return e.src.Stats().Acked == 1 })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if st := e.src.Stats(); st.Retried != 1 || st.DeadLettered != 0 || st.Double != 0 {
			t.Errorf("settlements %+v", st)
		}
		if got := e.rec.breakerChanges(); len(got) != 0 {
			t.Errorf("breaker changed %v; the source answered", got)
		}
	})
	t.Run("broker down", func(t *testing.T) {
		h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
			if m.Attempt == 1 {
				return errors.New("handler failed")
			}
			return nil
		})
		e, fs := newFaultEnv(t, h, consumer.Config{Concurrency: 1, BreakerThreshold: 1, Retry: fastRetry(4)}, true, msgN(0, "a"))
		fs.broker.down.Store(true)
		fs.setRetryErr(errors.New("connection refused"))
		e.start()
		waitFor(t, "the breaker to open", e.c.Paused)
		waitFor(t, "two more Retry tries", func() bool { return len(fs.retryAfters()) >= 3 })
		if len(e.deadLetters()) != 0 {
			t.Fatal("dead-lettered during a broker outage")
		}
		fs.setRetryErr(nil)
		fs.broker.down.Store(false)
		waitFor(t, "the retried copy to be processed", func() bool { return e.src.Stats().Acked == 1 })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if st := e.src.Stats(); st.Retried != 1 || st.DeadLettered != 0 || st.Double != 0 {
			t.Errorf("settlements %+v", st)
		}
	})
}

// TestRetryAfterCappedToMaxDelay: a RetryAfter beyond what the broker can
// honour is sent as the broker's maximum. Catches: a 13h delay passed to a
// broker whose limit is 12h (refused forever).
func TestRetryAfterCappedToMaxDelay(t *testing.T) {
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		if m.Attempt == 1 {
			return consumer.RetryAfter(errors.New("later"), 13*time.Hour)
		}
		return nil
	})
	e, fs := newFaultEnv(t, h, consumer.Config{Concurrency: 1, Retry: fastRetry(3)}, false, msgN(0, "a"))
	fs.maxDelay = 50 * time.Millisecond
	e.c, _ = consumer.New(fs, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "test", Concurrency: 1, Retry: fastRetry(3), Logger: discard, Observer: e.rec})
	e.start()
	waitFor(t, "the retried copy to be processed", func() bool { return e.src.Stats().Acked == 1 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := fs.retryAfters(); len(got) != 1 || got[0] != 50*time.Millisecond {
		t.Errorf("Retry delays %v, want [50ms] (the broker's maximum)", got)
	}
}

// TestTrimmedCopyReported: a copy the adapter trimmed is reported as such.
func TestTrimmedCopyReported(t *testing.T) {
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return consumer.Permanent(errors.New("bad")) })
	e, fs := newFaultEnv(t, h, consumer.Config{Concurrency: 1}, false, msgN(0, "a"))
	fs.trimmed = true
	e.start()
	waitFor(t, "the dead letter", func() bool { return e.rec.count(consumer.OutcomeDeadLettered) == 1 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	for _, ev := range e.rec.events {
		if ev.Outcome == consumer.OutcomeDeadLettered && !ev.Trimmed {
			t.Error("dead-letter event does not report the trimmed copy")
		}
	}
}

// TestBreakerLogs: one line when the breaker opens, with the cause, and one
// when it closes, with the outage's duration as text.
func TestBreakerLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs envtest.Buffer
		db := &dependency{}
		db.down.Store(true)
		h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
			if db.down.Load() {
				return consumer.UnavailableFrom(errors.New("database down"), db)
			}
			return nil
		})
		e := newEnv(t, h, consumer.Config{Concurrency: 1, BreakerThreshold: 1, OutageBackoff: fastOutage,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, msgN(0, "a"))
		e.start()
		waitFor(t, "the breaker to open", e.c.Paused)
		db.down.Store(false)
		waitFor(t, "the message to be processed", func() bool { return e.src.Stats().Acked == 1 })
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		var opened, closed int
		for line := range strings.Lines(logs.String()) {
			switch {
			case strings.Contains(line, `"msg":"breaker open`):
				opened++
				if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, `"cause":"unavailable: database down"`) {
					t.Errorf("open line lacks its level or cause: %s", line)
				}
			case strings.Contains(line, `"msg":"breaker closed`):
				closed++
				if !regexp.MustCompile(`"outage":"[0-9.]+m?s"`).MatchString(line) {
					t.Errorf("close line lacks the outage's duration as text: %s", line)
				}
			case regexp.MustCompile(`"in":[0-9]`).MatchString(line):
				t.Errorf("a duration logged as a bare number: %s", line)
			}
		}
		if opened != 1 || closed != 1 {
			t.Errorf("%d open and %d close lines, want one each:\n%s", opened, closed, logs.String())
		}
	})
}

// TestRunReturnsNilAtDeadline: a Run whose context ends by deadline stops as
// cleanly as one whose context is cancelled.
func TestRunReturnsNilAtDeadline(t *testing.T) {
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	e := newEnv(t, h, consumer.Config{Concurrency: 1}, msgN(0, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := e.c.Run(ctx); err != nil {
		t.Fatalf("Run = %v, want nil after its deadline", err)
	}
	if e.src.Stats().Acked != 1 {
		t.Errorf("%d acked, want 1", e.src.Stats().Acked)
	}
}
