package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// tierTopicsOn returns the retry topics of (topic, group) that exist, by
// delay.
func tierTopicsOn(t *testing.T, addrs []string, topic, group string) retry.Tiers {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, err := existingTiers(ctx, kadm.NewClient(client(t, addrs)), topic, group)
	require.NoError(t, err)
	var out retry.Tiers
	for _, n := range ts.topics {
		out = append(out, ts.tierOf[n])
	}
	return out
}

// TestTiersBoundedByPolicy runs a consumer whose policy (3 attempts, 1 s
// then 2 s, jitter 20 %) reaches 2.4 s over the default tiers: only the
// 1 s and 10 s retry topics are created, its retries still come back no
// sooner than their delays, and a policy reaching 48 s gets the tiers up
// to 1 m, and no further. A third Source whose policy reaches only 1 s
// still consumes the tiers the second created: a record left in its 1 m
// tier is delivered.
func TestTiersBoundedByPolicy(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("reach")
	createTopic(t, addrs, topic, 1)
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: "short", Tiers: retry.DefaultTiers})
	var mu sync.Mutex
	var seen []time.Time
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
	stop := runConsumer(t, src, h, consumer.Config{Name: "short", Observer: obs,
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: 2 * time.Second}})
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "m", Key: "k", Body: []byte("b")})
	adaptertest.WaitUntil(t, 60*time.Second, "the third attempt", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 3
	})
	stop()
	mu.Lock()
	for i, d := range asked {
		gap := seen[i+1].Sub(seen[i])
		t.Logf("retry %d: asked %s, came back after %s", i+1, d.Round(time.Millisecond), gap.Round(time.Millisecond))
		require.GreaterOrEqual(t, gap, d, "retry %d came back early", i+1)
	}
	mu.Unlock()
	require.Equal(t, retry.DefaultTiers[:2], tierTopicsOn(t, addrs, topic, "short"), "retry topics of a policy reaching 2.4s")

	src = newSource(t, Config{Brokers: addrs, Topic: topic, Group: "long", Tiers: retry.DefaultTiers})
	stop = runConsumer(t, src, h, consumer.Config{Name: "long",
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: 20 * time.Second, MaxInterval: 40 * time.Second}})
	adaptertest.WaitUntil(t, 30*time.Second, "the 1m retry topic", func() bool {
		return len(tierTopicsOn(t, addrs, topic, "long")) >= 3
	})
	stop()
	require.Equal(t, retry.DefaultTiers[:3], tierTopicsOn(t, addrs, topic, "long"), "retry topics of a policy reaching 48s")

	// A record left in the 1 m tier by the longer configuration, due now.
	publish(t, client(t, addrs), RetryTopic(topic, "long", time.Minute), &consumer.Message{ID: "left", Key: "k", Body: []byte("b"),
		Headers: map[string]string{consumer.HeaderAttempt: "2", consumer.HeaderRetryNotBefore: time.Now().UTC().Format(time.RFC3339Nano)}})
	src = newSource(t, Config{Brokers: addrs, Topic: topic, Group: "long", Tiers: retry.DefaultTiers})
	got := make(chan string, 100)
	stop = runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		got <- m.ID
		return nil
	}), consumer.Config{Name: "long", Retry: retry.Policy{MaxAttempts: 2, InitialInterval: time.Second, MaxInterval: time.Second}})
	deadline := time.After(60 * time.Second)
	for id := ""; id != "left"; { // "m" may come back from its own retry too
		select {
		case id = <-got:
		case <-deadline:
			t.Fatal("the record left in the 1m tier was not delivered")
		}
	}
	stop()
}

type observerFunc func(consumer.Event)

func (f observerFunc) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (f observerFunc) BreakerChanged(bool)                          {}
