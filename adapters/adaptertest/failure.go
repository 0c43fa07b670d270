package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

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
	check(exh, consumer.ReasonExhausted, "still failing", "", "2")
	if st := src.Stats(); st.DeadLettered != 2 || st.Retried != 1 || st.Acked != 0 || st.Double != 0 || st.Outstanding != 0 {
		t.Errorf("settlements: %+v, want 2 dead letters and 1 retry", st)
	}
}
