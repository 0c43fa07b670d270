package kafka

import (
	"context"
	"errors"
	"fmt"
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
