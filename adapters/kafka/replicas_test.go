package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Two replicas of one group with different retry tiers (a rolling deploy
// that adds a tier): the newer one's tier topic is consumed by the older
// one too, started after it, so when the newer replica stops, the retries
// it left in its tier are handled by the other. Every message is handled,
// first with Attempt 1 and then 2, and each key's first attempts come in
// publish order.
func TestReplicasWithDifferentTiers(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("replicas")
	group := topic
	createTopic(t, addrs, topic, 2)
	const short, long = 100 * time.Millisecond, 2 * time.Second

	var (
		mu       sync.Mutex
		attempts = map[string][]int{}
		lastSeq  = map[string]int{}
		errs     []string
	)
	handler := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		prev := attempts[m.ID]
		if m.Attempt != len(prev)+1 {
			errs = append(errs, fmt.Sprintf("%s: Attempt %d on call %d", m.ID, m.Attempt, len(prev)+1))
		}
		attempts[m.ID] = append(prev, m.Attempt)
		if m.Attempt == 1 {
			var seq int
			_, _ = fmt.Sscanf(string(m.Body), "%d", &seq)
			if last, ok := lastSeq[m.Key]; ok && seq < last {
				errs = append(errs, fmt.Sprintf("%s first handled after sequence %d of its key", m.ID, last))
			}
			lastSeq[m.Key] = seq
			return errors.New("first attempt fails")
		}
		return nil
	})
	done := func(ids []string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, id := range ids {
			if len(attempts[id]) >= 2 {
				n++
			}
		}
		return n
	}
	run := func(tiers retry.Tiers, delay time.Duration) func() {
		src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 2, Tiers: tiers})
		return runConsumer(t, src, handler, consumer.Config{Name: group, Concurrency: 4,
			Retry: retry.Policy{MaxAttempts: 3, InitialInterval: delay, MaxInterval: delay, Multiplier: 1, Jitter: retry.NoJitter}})
	}
	batch := func(from, n int) ([]*consumer.Message, []string) {
		var msgs []*consumer.Message
		var ids []string
		for seq := from; seq < from+n; seq++ {
			for k := range 4 {
				id := fmt.Sprintf("k%d-%02d", k, seq)
				msgs = append(msgs, &consumer.Message{ID: id, Key: fmt.Sprintf("k%d", k), Body: []byte(fmt.Sprint(seq))})
				ids = append(ids, id)
			}
		}
		return msgs, ids
	}

	stopNew := run(retry.Tiers{short, long}, long) // the new configuration: its retries wait in the long tier
	stopOld := run(retry.Tiers{short}, short)      // the old one, started after: it consumes the long tier too
	defer stopOld()
	first, firstIDs := batch(0, 5)
	publish(t, client(t, addrs), topic, first...)
	// Every message had its first attempt; the new replica's retries wait
	// in its long tier while it stops.
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "every first attempt", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range firstIDs {
			if len(attempts[id]) == 0 {
				return false
			}
		}
		return true
	})
	stopNew()
	second, secondIDs := batch(5, 5)
	publish(t, client(t, addrs), topic, second...)
	all := append(firstIDs, secondIDs...)
	adaptertest.WaitUntil(t, adaptertest.ResumeBound, "every message handled by the remaining replica", func() bool { return done(all) == len(all) })
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, errs)
}

// A replica started before another of its group created a further retry
// tier (its policy reaches further) consumes that tier too, once it exists:
// when the replica that created it leaves, the retries it left there are
// handled by the one that remains, with their Attempt from the headers.
// Replica A's policy reaches the 100 ms tier only (New also creates 10 s);
// replica B's reaches 11 s, so its first Receive creates the 11 s tier and
// its retries wait there. B stops right after routing them; every such
// retry must be handled by A within 30 s plus the tier's delay.
func TestEarlierReplicaConsumesLaterTier(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("latertier")
	group := topic
	createTopic(t, addrs, topic, 2)
	const short, far = 100 * time.Millisecond, 11 * time.Second
	tiers := retry.Tiers{short, 10 * time.Second, far}

	var (
		mu       sync.Mutex
		attempts = map[string][]int{}
		routed   []string // the IDs B retried into the far tier
	)
	handler := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[m.ID] = append(attempts[m.ID], m.Attempt)
		if m.Attempt == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})
	onB := observerFunc(func(ev consumer.Event) {
		if ev.Outcome == consumer.OutcomeRetried && ev.RetryAfter == far {
			mu.Lock()
			routed = append(routed, ev.Message.ID)
			mu.Unlock()
		}
	})
	policy := func(delay time.Duration) retry.Policy {
		return retry.Policy{MaxAttempts: 2, InitialInterval: delay, MaxInterval: delay, Multiplier: 1, Jitter: retry.NoJitter}
	}

	a := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 2, Tiers: tiers})
	runConsumer(t, a, handler, consumer.Config{Name: group, Concurrency: 4, Retry: policy(short)})
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "A holds the source topic", func() bool { return len(a.assigned(topic)) == 2 })
	require.NotContains(t, tierTopicsOn(t, addrs, topic, group), far, "the far tier exists before B started")

	b := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 2, Tiers: tiers})
	stopB := runConsumer(t, b, handler, consumer.Config{Name: group, Concurrency: 4, Retry: policy(far), Observer: onB})
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "B holds a source partition", func() bool { return len(b.assigned(topic)) == 1 })

	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("m%d", i)
		ids = append(ids, id)
		publish(t, client(t, addrs), topic, &consumer.Message{ID: id, Key: fmt.Sprintf("k%d", i), Body: []byte("b")})
	}
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "B retried a message into the far tier", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(routed) > 0
	})
	stopB()
	left := time.Now()
	mu.Lock()
	inFar := slices.Clone(routed)
	mu.Unlock()

	deadline := 30*time.Second + far
	handled := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, id := range ids {
			if len(attempts[id]) >= 2 {
				out = append(out, id)
			}
		}
		return out
	}
	for len(handled()) < len(ids) && time.Since(left) < deadline {
		time.Sleep(50 * time.Millisecond)
	}
	got := handled()
	t.Logf("%d of %d handled a second time %s after B left", len(got), len(ids), time.Since(left).Round(time.Millisecond))
	missing := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(got, id) })
	require.Emptyf(t, missing, "not handled a second time %s after B left (B retried %v into the %s tier)", deadline, inFar, far)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		require.Equal(t, []int{1, 2}, attempts[id], "%s: attempts", id)
	}
}
