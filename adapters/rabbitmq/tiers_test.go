package rabbitmq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// existingTiers returns which of tiers have a retry queue for (queue, consumerName),
// by passive declares.
func existingTiers(t *testing.T, queue, consumerName string, tiers retry.Tiers) retry.Tiers {
	t.Helper()
	var out retry.Tiers
	for _, d := range tiers {
		if _, ok := tryDepth(t, RetryQueue(queue, consumerName, d)); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestTiersBoundedByPolicy runs a consumer whose policy (3 attempts, 1 s
// then 2 s, jitter 20 %) reaches 2.4 s over the default tiers: only the
// 1 s and 10 s retry queues are declared, its retries still come back no
// sooner than the delay the runtime logged, and a policy reaching a minute
// gets the tiers up to 1 m as well, and no further.
func TestTiersBoundedByPolicy(t *testing.T) {
	queue := uniqueName("reach")
	cleanupTopology(t, queue, "ledger", retry.DefaultTiers)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Tiers: retry.DefaultTiers})
	var mu sync.Mutex
	var seen []time.Time // when each attempt of "m" started
	var asked []time.Duration
	obs := observerFunc(func(ev consumer.Event) {
		if ev.Outcome == consumer.OutcomeRetried {
			mu.Lock()
			asked = append(asked, ev.RetryAfter)
			mu.Unlock()
		}
	})
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, time.Now())
		if m.Attempt < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	_, stop := runConsumer(t, src, h, consumer.Config{Name: "ledger", Observer: obs,
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: 2 * time.Second}})
	publish(t, queue, msgs("m", 1)...)
	adaptertest.WaitUntil(t, 30*time.Second, "the third attempt", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 3
	})
	stop()
	mu.Lock()
	for i, d := range asked {
		gap := seen[i+1].Sub(seen[i])
		t.Logf("retry %d: asked %s, came back after %s", i+1, d, gap.Round(time.Millisecond))
		if gap < d {
			t.Errorf("retry %d came back after %s, before its delay %s", i+1, gap, d)
		}
	}
	mu.Unlock()
	if got, want := existingTiers(t, queue, "ledger", retry.DefaultTiers), retry.DefaultTiers[:2]; !equalTiers(got, want) {
		t.Errorf("retry queues declared for tiers %v, want %v (the policy reaches 2.4s)", got, want)
	}

	far := uniqueName("reach-far")
	cleanupTopology(t, far, "ledger", retry.DefaultTiers)
	src = newSource(t, Config{Queue: far, Consumer: "ledger", Tiers: retry.DefaultTiers})
	_, stop = runConsumer(t, src, h, consumer.Config{Name: "ledger",
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: 20 * time.Second, MaxInterval: 40 * time.Second}})
	adaptertest.WaitUntil(t, 10*time.Second, "the 1m retry queue", func() bool {
		_, ok := tryDepth(t, RetryQueue(far, "ledger", time.Minute))
		return ok
	})
	stop()
	if got, want := existingTiers(t, far, "ledger", retry.DefaultTiers), retry.DefaultTiers[:3]; !equalTiers(got, want) {
		t.Errorf("retry queues declared for tiers %v, want %v (the policy reaches 48s)", got, want)
	}
}

func equalTiers(a, b retry.Tiers) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type observerFunc func(consumer.Event)

func (f observerFunc) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (f observerFunc) BreakerChanged(bool)                          {}
