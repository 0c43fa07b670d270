package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Timing of the RetryTimeline subtest.
const (
	// TimelineDelay is its policy's delay: between two of the suites'
	// tiers (RabbitMQ's test tiers 2s and 5s), and not a whole second.
	TimelineDelay = 2500 * time.Millisecond
	// TimelineSlack is how late a retry may come after the delay the
	// runtime logged: receive latency and a loaded machine, far below the
	// gap to the next tier.
	TimelineSlack = 2 * time.Second
)

// testRetryTimeline: a retry comes when the runtime's "retrying" log line
// says it will, within [in, in+TimelineSlack], and that line agrees with
// Event.RetryAfter. A broker that waits a fixed tier or whole seconds
// states the delay it waits (consumer.Capabilities.RetryDelay). Catches: a
// log that states the policy's delay while the broker waits another tier
// (issue 23: 1.1s logged, 10s waited on RabbitMQ).
func testRetryTimeline(t *testing.T, h Harness) {
	const n = 3
	name := SourceName("timeline")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("timeline-%d", i), "", "b")
	}
	h.Publish(t, name, msgs...)

	var mu sync.Mutex
	failed := map[string]time.Time{}
	retried := map[string]time.Time{}
	stated := map[string]time.Duration{}
	logged := map[string]time.Duration{}
	logs := &retryLog{logged: logged, mu: &mu}
	src := h.NewSource(t, name, ConsumerName)
	stop := run(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if m.Attempt == 1 {
			failed[m.ID] = now
			return errors.New("later")
		}
		retried[m.ID] = now
		return nil
	}), consumer.Config{
		Concurrency: n,
		Logger:      slog.New(logs),
		Observer: observerFunc(func(ev consumer.Event) {
			if ev.Outcome == consumer.OutcomeRetried {
				mu.Lock()
				stated[ev.Message.ID] = ev.RetryAfter
				mu.Unlock()
			}
		}),
		Retry: retry.Policy{MaxAttempts: 2, InitialInterval: TimelineDelay, MaxInterval: TimelineDelay, Multiplier: 1, Jitter: retry.NoJitter},
	})
	waitFor(t, "every retry", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(retried) == n
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	for _, m := range msgs {
		in, ok := logged[m.ID]
		if !ok {
			t.Errorf("%s: no \"retrying\" log line with an in= duration", m.ID)
			continue
		}
		if stated[m.ID] != in {
			t.Errorf("%s: logged in=%s, Event.RetryAfter %s", m.ID, in, stated[m.ID])
		}
		if gap := retried[m.ID].Sub(failed[m.ID]); gap < in || gap > in+TimelineSlack {
			t.Errorf("%s: retried %s after its failure; the log said in=%s (asked %s), want within [%s, %s]",
				m.ID, gap.Round(time.Millisecond), in, TimelineDelay, in, in+TimelineSlack)
		} else {
			t.Logf("%s: logged in=%s, retried after %s", m.ID, in, gap.Round(time.Millisecond))
		}
	}
}

type observerFunc func(consumer.Event)

func (f observerFunc) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (observerFunc) BreakerChanged(bool)                            {}

// retryLog is a slog.Handler keeping the in= duration of each "retrying"
// line by message_id.
type retryLog struct {
	mu     *sync.Mutex
	logged map[string]time.Duration
}

func (l *retryLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *retryLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "retrying" {
		return nil
	}
	var id string
	var in time.Duration
	ok := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "message_id":
			id = a.Value.String()
		case "in":
			d, err := time.ParseDuration(a.Value.String())
			in, ok = d, err == nil
		}
		return true
	})
	if ok {
		l.mu.Lock()
		l.logged[id] = in
		l.mu.Unlock()
	}
	return nil
}

func (l *retryLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *retryLog) WithGroup(string) slog.Handler      { return l }
