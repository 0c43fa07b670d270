package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// ConsumerName is the consumer name every subtest uses.
const ConsumerName = "adaptertest"

// Timing of the suite. Retry delays are short so one adapter's run stays
// well under 30 seconds.
const (
	// RetryDelay is the fixed delay of the retry subtest's policy.
	RetryDelay = 300 * time.Millisecond
	// QuietWindow is how long a Source must hand out nothing when nothing
	// is left to deliver.
	QuietWindow = time.Second
	// WaitTimeout bounds every wait for deliveries.
	WaitTimeout = 20 * time.Second
)

// Run runs the conformance suite against h. Each subtest uses a unique source
// name and checks one guarantee every adapter must hold:
//
//   - SettleOnce: every published message is handled and acked exactly once
//     when the handler succeeds, and nothing is redelivered afterwards;
//   - Redelivery: deliveries left unsettled when a Source closes come back on
//     a new Source (Attempt >= 1 and not lower than before), acked ones don't;
//   - RetryDelay: a retried copy is never delivered before its delay, keeps
//     ID, Key and Body and carries the attempt and error headers;
//   - RetryTimeline: a retry comes when the runtime's log says it will
//     (within TimelineSlack), for a delay between two tiers;
//   - DeadLetter: the dead-letter copy keeps ID, Key, Body and headers and
//     carries reason, error, error type, attempt, consumer and original source;
//   - MissingID: a message without ID is dead-lettered with reason missing-id
//     and never reaches the handler;
//   - InvalidID: a message whose ID the runtime refuses (it holds a TAB) is
//     dead-lettered with reason invalid-id, its ID kept, and never reaches
//     the handler, while the messages published with it, on its key, are
//     handled in order;
//   - Backpressure: Receive never hands out more than asked, and a Consumer
//     never holds more than MaxInFlight deliveries;
//   - KeyOrder: messages with one key are handled in publish order while
//     several workers run;
//   - SettleTwice: a settled delivery refuses a second Ack, Retry or
//     DeadLetter with consumer.ErrAlreadySettled and publishes nothing;
//   - CloseKeepsAttempt: clean closes over received, unhandled deliveries
//     never raise Message.Attempt;
//   - CloseReleasesAll: with a Receive outstanding at Close, a new Source
//     gets every unsettled message within CloseDeadline, Attempt unchanged;
//   - ConsumerNames: two consumer names of one source each get every message
//     (Capabilities().FanOut) or split them, as the adapter declares;
//   - CopyPublishFails: a retry or dead-letter copy the broker refuses
//     leaves the original unsettled; the Harness must be a CopyFaulter;
//   - Probe: the Source is a consumer.Prober that answers nil on a live
//     broker and fails on a cancelled ctx.
//
// RunRedrive is a separate entry point: it needs a RedriveHarness.
func Run(t *testing.T, h Harness) {
	t.Run("SettleOnce", func(t *testing.T) { testSettleOnce(t, h) })
	t.Run("Redelivery", func(t *testing.T) { testRedelivery(t, h) })
	t.Run("RetryDelay", func(t *testing.T) { testRetryDelay(t, h) })
	t.Run("RetryTimeline", func(t *testing.T) { testRetryTimeline(t, h) })
	t.Run("DeadLetter", func(t *testing.T) { testDeadLetter(t, h) })
	t.Run("MissingID", func(t *testing.T) { testMissingID(t, h) })
	t.Run("InvalidID", func(t *testing.T) { testInvalidID(t, h) })
	t.Run("Backpressure", func(t *testing.T) { testBackpressure(t, h) })
	t.Run("KeyOrder", func(t *testing.T) { testKeyOrder(t, h) })
	t.Run("SettleTwice", func(t *testing.T) { testSettleTwice(t, h) })
	t.Run("CloseKeepsAttempt", func(t *testing.T) { testCloseKeepsAttempt(t, h) })
	t.Run("CloseReleasesAll", func(t *testing.T) { testCloseReleasesAll(t, h) })
	t.Run("ConsumerNames", func(t *testing.T) { testConsumerNames(t, h) })
	t.Run("CopyPublishFails", func(t *testing.T) { testCopyPublishFails(t, h) })
	t.Run("Probe", func(t *testing.T) { testProbe(t, h) })
}

// SourceName returns a unique source name made of lowercase letters, digits
// and dashes, valid for every supported broker.
func SourceName(test string) string {
	return fmt.Sprintf("oncely-%s-%08x", test, rand.Uint32())
}

func msg(id, key, body string) *consumer.Message {
	return &consumer.Message{ID: id, Key: key, Body: []byte(body), Partition: -1, Offset: -1}
}

// run starts a Consumer over src and returns a func that stops it and checks
// that it stopped cleanly.
func run(t *testing.T, src consumer.Source, h consumer.Handler, cfg consumer.Config) (stop func()) {
	t.Helper()
	cfg.Name = ConsumerName
	_, stop = RunConsumer(t, src, h, cfg)
	return stop
}

// waitFor is WaitUntil with WaitTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	WaitUntil(t, WaitTimeout, what, cond)
}

func testSettleOnce(t *testing.T, h Harness) {
	const n = 100
	name := SourceName("settle")
	msgs := make([]*consumer.Message, n)
	bodies := make(map[string]string, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("settle-%03d", i), fmt.Sprintf("k%d", i%10), fmt.Sprintf("body-%d", i))
		bodies[msgs[i].ID] = string(msgs[i].Body)
	}
	h.Publish(t, name, msgs...)

	var mu sync.Mutex
	handled := make(map[string]int)
	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	stop := run(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled[m.ID]++
		if want := bodies[m.ID]; string(m.Body) != want {
			t.Errorf("%s: body %q, want %q", m.ID, m.Body, want)
		}
		return nil
	}), consumer.Config{Concurrency: 8})
	waitFor(t, "every message to be acked", func() bool { return src.Stats().Acked >= n })
	stop()

	st := src.Stats()
	if st.Acked != n || st.Retried != 0 || st.DeadLettered != 0 || st.Double != 0 || st.Outstanding != 0 {
		t.Errorf("settlements: %+v, want %d acks and nothing else", st, n)
	}
	mu.Lock()
	for _, m := range msgs {
		if handled[m.ID] != 1 {
			t.Errorf("%s handled %d times, want 1", m.ID, handled[m.ID])
		}
	}
	if len(handled) != n {
		t.Errorf("handled %d distinct IDs, want %d", len(handled), n)
	}
	mu.Unlock()

	again := h.NewSource(t, name, ConsumerName)
	AssertQuiet(t, again, QuietWindow)
	closeSource(t, again)
	if dl := h.DeadLetters(t, name, ConsumerName, 0, 0); len(dl) != 0 {
		t.Errorf("%d dead letters, want none", len(dl))
	}
}

func testRedelivery(t *testing.T, h Harness) {
	const n = 5
	name := SourceName("redeliver")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("redeliver-%d", i), "one-key", fmt.Sprintf("body-%d", i))
	}
	h.Publish(t, name, msgs...)

	first := h.NewSource(t, name, ConsumerName)
	got := ReceiveN(t, first, n, WaitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	attempts := make(map[string]int)
	for i, d := range got {
		m := d.Message()
		if m.Attempt < 1 {
			t.Errorf("%s: first delivery has Attempt %d, want >= 1", m.ID, m.Attempt)
		}
		attempts[m.ID] = m.Attempt
		if i < 2 {
			if err := d.Ack(ctx); err != nil {
				t.Fatalf("ack %s: %v", m.ID, err)
			}
		}
	}
	closeSource(t, first)

	second := h.NewSource(t, name, ConsumerName)
	again := ReceiveN(t, second, n-2, WaitTimeout)
	want := make(map[string]*consumer.Message)
	for _, d := range got[2:] {
		want[d.Message().ID] = d.Message()
	}
	for _, d := range again {
		m := d.Message()
		w, ok := want[m.ID]
		if !ok {
			t.Errorf("redelivered %q, which was acked or never published", m.ID)
			continue
		}
		delete(want, m.ID)
		if m.Key != w.Key || string(m.Body) != string(w.Body) {
			t.Errorf("%s redelivered with key %q body %q, want %q %q", m.ID, m.Key, m.Body, w.Key, w.Body)
		}
		if m.Attempt < 1 || m.Attempt < attempts[m.ID] {
			t.Errorf("%s redelivered with Attempt %d, was %d", m.ID, m.Attempt, attempts[m.ID])
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("ack %s: %v", m.ID, err)
		}
	}
	for id := range want {
		t.Errorf("%s was not redelivered", id)
	}
	AssertQuiet(t, second, QuietWindow)
	closeSource(t, second)
}

func testRetryDelay(t *testing.T, h Harness) {
	const n, attempts = 3, 3
	name := SourceName("retry")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("retry-%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("body-%d", i))
	}
	h.Publish(t, name, msgs...)

	type seen struct {
		attempt       int
		start, failed time.Time
		msg           *consumer.Message
	}
	var mu sync.Mutex
	hist := make(map[string][]seen)
	var done int
	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	stop := run(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		s := seen{attempt: m.Attempt, start: time.Now(), msg: m.Clone()}
		mu.Lock()
		defer mu.Unlock()
		if m.Attempt < attempts {
			s.failed = time.Now()
			hist[m.ID] = append(hist[m.ID], s)
			return errors.New("try later")
		}
		hist[m.ID] = append(hist[m.ID], s)
		done++
		return nil
	}), consumer.Config{Concurrency: 4, Retry: retry.Policy{
		MaxAttempts: attempts, InitialInterval: RetryDelay, MaxInterval: RetryDelay, Multiplier: 1, Jitter: retry.NoJitter,
	}})
	waitFor(t, "the last attempt of every message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done >= n
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	for _, want := range msgs {
		got := hist[want.ID]
		if len(got) != attempts {
			t.Errorf("%s handled %d times, want %d", want.ID, len(got), attempts)
			continue
		}
		for i, s := range got {
			if s.attempt != i+1 {
				t.Errorf("%s: delivery %d has Attempt %d", want.ID, i+1, s.attempt)
			}
			if s.msg.Key != want.Key || string(s.msg.Body) != string(want.Body) {
				t.Errorf("%s attempt %d: key %q body %q, want %q %q", want.ID, s.attempt, s.msg.Key, s.msg.Body, want.Key, want.Body)
			}
			if i == 0 {
				continue
			}
			if gap := s.start.Sub(got[i-1].failed); gap < RetryDelay {
				t.Errorf("%s attempt %d delivered %s after attempt %d failed, before the %s retry delay", want.ID, s.attempt, gap, i, RetryDelay)
			}
			if a := s.msg.Header(consumer.HeaderAttempt); a != strconv.Itoa(i+1) {
				t.Errorf("%s attempt %d: header %s = %q", want.ID, s.attempt, consumer.HeaderAttempt, a)
			}
			if e := s.msg.Header(consumer.HeaderError); e != "try later" {
				t.Errorf("%s attempt %d: header %s = %q", want.ID, s.attempt, consumer.HeaderError, e)
			}
			if nb := consumer.NotBeforeFromHeaders(s.msg.Headers); nb.IsZero() || s.start.Before(nb) {
				t.Errorf("%s attempt %d started at %s, %s is %q", want.ID, s.attempt, s.start.Format(time.RFC3339Nano), consumer.HeaderRetryNotBefore, s.msg.Header(consumer.HeaderRetryNotBefore))
			}
		}
	}
	if st := src.Stats(); st.Double != 0 || st.DeadLettered != 0 || st.Outstanding != 0 {
		t.Errorf("settlements: %+v", st)
	}
	if dl := h.DeadLetters(t, name, ConsumerName, 0, 0); len(dl) != 0 {
		t.Errorf("%d dead letters, want none", len(dl))
	}
}

// decodeError is the handler error of the DeadLetter subtest; its type name
// must appear in the oncely-error-type header.
type decodeError struct{ field string }

func (e *decodeError) Error() string { return "cannot decode " + e.field }

func testDeadLetter(t *testing.T, h Harness) {
	name := SourceName("dlq")
	perm := msg("dlq-permanent", "k1", "payload-1")
	perm.Headers = map[string]string{"x-custom": "kept"}
	exh := msg("dlq-exhausted", "k2", "payload-2")
	h.Publish(t, name, perm, exh)

	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	stop := run(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		if m.ID == perm.ID {
			return consumer.Permanent(&decodeError{field: "amount"})
		}
		return errors.New("still failing")
	}), consumer.Config{Concurrency: 2, Retry: retry.Policy{
		MaxAttempts: 2, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond, Jitter: retry.NoJitter,
	}})
	dl := h.DeadLetters(t, name, ConsumerName, 2, WaitTimeout)
	stop()

	if len(dl) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dl))
	}
	byID := make(map[string]*consumer.Message)
	for _, m := range dl {
		byID[m.ID] = m
	}
	check := func(want *consumer.Message, reason, errText, errType, attempt string) {
		t.Helper()
		m := byID[want.ID]
		if m == nil {
			t.Errorf("no dead letter with ID %q (got %v)", want.ID, slices.Collect(maps.Keys(byID)))
			return
		}
		if m.Key != want.Key || string(m.Body) != string(want.Body) {
			t.Errorf("%s: key %q body %q, want %q %q", want.ID, m.Key, m.Body, want.Key, want.Body)
		}
		for k, v := range want.Headers {
			if m.Header(k) != v {
				t.Errorf("%s: header %s = %q, want %q (kept from the original)", want.ID, k, m.Header(k), v)
			}
		}
		wantH := map[string]string{
			consumer.HeaderDeadLetterReason: reason,
			consumer.HeaderError:            errText,
			consumer.HeaderErrorType:        errType,
			consumer.HeaderAttempt:          attempt,
			consumer.HeaderConsumer:         ConsumerName,
			consumer.HeaderOriginalSource:   name,
		}
		for k, v := range wantH {
			if m.Header(k) != v {
				t.Errorf("%s: header %s = %q, want %q", want.ID, k, m.Header(k), v)
			}
		}
		for _, k := range []string{consumer.HeaderFailedAt, consumer.HeaderFirstFailedAt} {
			if _, err := time.Parse(time.RFC3339Nano, m.Header(k)); err != nil {
				t.Errorf("%s: header %s = %q: %v", want.ID, k, m.Header(k), err)
			}
		}
	}
	check(perm, consumer.ReasonPermanent, "permanent: cannot decode amount", "*adaptertest.decodeError", "1")
	check(exh, consumer.ReasonExhausted, "still failing", "*errors.errorString", "2")
	if st := src.Stats(); st.DeadLettered != 2 || st.Retried != 1 || st.Acked != 0 || st.Double != 0 || st.Outstanding != 0 {
		t.Errorf("settlements: %+v, want 2 dead letters and 1 retry", st)
	}
}

func testBackpressure(t *testing.T, h Harness) {
	t.Run("ReceiveMax", func(t *testing.T) {
		const n, most = 30, 4
		name := SourceName("recvmax")
		msgs := make([]*consumer.Message, n)
		for i := range msgs {
			msgs[i] = msg(fmt.Sprintf("max-%02d", i), fmt.Sprintf("k%d", i%3), "b")
		}
		h.Publish(t, name, msgs...)
		src := h.NewSource(t, name, ConsumerName)
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		defer cancel()
		got := 0
		for got < n {
			ds, err := src.Receive(ctx, most)
			if err != nil {
				t.Fatalf("after %d deliveries: %v", got, err)
			}
			if len(ds) > most {
				t.Fatalf("Receive(max=%d) returned %d deliveries", most, len(ds))
			}
			for _, d := range ds {
				if err := d.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got += len(ds)
		}
		if got != n {
			t.Errorf("received %d, want %d", got, n)
		}
		closeSource(t, src)
	})

	t.Run("MaxInFlight", func(t *testing.T) {
		const n, inFlight, workers = 40, 4, 2
		name := SourceName("inflight")
		msgs := make([]*consumer.Message, n)
		for i := range msgs {
			msgs[i] = msg(fmt.Sprintf("inflight-%02d", i), fmt.Sprintf("k%d", i), "b")
		}
		h.Publish(t, name, msgs...)

		release := make(chan struct{})
		var mu sync.Mutex
		running, handled := 0, 0
		src := NewCountingSource(h.NewSource(t, name, ConsumerName))
		stop := run(t, src, consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
			mu.Lock()
			running++
			mu.Unlock()
			defer func() {
				mu.Lock()
				running--
				handled++
				mu.Unlock()
			}()
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}), consumer.Config{Concurrency: workers, MaxInFlight: inFlight})

		deadline := time.Now().Add(WaitTimeout)
		for {
			mu.Lock()
			r := running
			mu.Unlock()
			st := src.Stats()
			if r == workers && st.Outstanding == inFlight {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %d blocked workers and %d deliveries outstanding: %d running, %+v", workers, inFlight, r, st)
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Intake must stay stopped while every slot is taken.
		deadline = time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			if st := src.Stats(); st.Received != inFlight {
				t.Fatalf("%d deliveries received while the handlers block, want %d (MaxInFlight)", st.Received, inFlight)
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(release)
		waitFor(t, "every message to be acked", func() bool { return src.Stats().Acked >= n })
		stop()
		st := src.Stats()
		if st.MaxOutstanding > inFlight || st.OverAsked != 0 {
			t.Errorf("%d deliveries outstanding at once (MaxInFlight %d), %d Receive calls returned more than asked", st.MaxOutstanding, inFlight, st.OverAsked)
		}
		if st.Acked != n || st.Double != 0 {
			t.Errorf("settlements: %+v, want %d acks", st, n)
		}
	})
}

func testKeyOrder(t *testing.T, h Harness) {
	const n, keys = 300, 6
	name := SourceName("order")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("order-%03d", i), fmt.Sprintf("key-%d", i%keys), strconv.Itoa(i/keys))
	}
	h.Publish(t, name, msgs...)

	var mu sync.Mutex
	seqs := make(map[string][]int)
	handled := 0
	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	stop := run(t, src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		seq, err := strconv.Atoi(string(m.Body))
		if err != nil {
			return consumer.Permanent(err)
		}
		mu.Lock()
		defer mu.Unlock()
		seqs[m.Key] = append(seqs[m.Key], seq)
		handled++
		return nil
	}), consumer.Config{Concurrency: 8})
	waitFor(t, "every message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled >= n
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		got := seqs[key]
		want := make([]int, n/keys)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s handled in order %v, want %v", key, got, want)
		}
	}
}

func closeSource(t testing.TB, src consumer.Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := src.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}
