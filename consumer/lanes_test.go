package consumer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oncely/oncely/consumer"
)

// TestLanesRunApart: deliveries on different lanes run at the same time,
// on both schedulers. Each case's two deliveries meet in their handlers: each
// waits (on synctest's fake clock) for the other to start. Catches lanes
// merged that Ordering keeps apart — all partitions on one lane, empty keys
// on one lane instead of their partitions', OrderByPartition keyed by key,
// unordered deliveries put on a lane — which the order tests cannot see:
// one lane for everything keeps every order.
func TestLanesRunApart(t *testing.T) {
	msg := func(id, key string, partition int32) *consumer.Message {
		return &consumer.Message{ID: id, Key: key, Partition: partition, Attempt: 1}
	}
	cases := []struct {
		name     string
		ordering consumer.Ordering
		a, b     *consumer.Message
	}{
		{"byKey/two keys, one partition", consumer.OrderByKey, msg("a", "k1", 0), msg("b", "k2", 0)},
		{"byKey/no key, two partitions", consumer.OrderByKey, msg("a", "", 0), msg("b", "", 1)},
		{"byKey/a key and no key, one partition", consumer.OrderByKey, msg("a", "k1", 0), msg("b", "", 0)},
		{"byPartition/one key, two partitions", consumer.OrderByPartition, msg("a", "k1", 0), msg("b", "k1", 1)},
		{"unordered/one key, one partition", consumer.Unordered, msg("a", "k1", 0), msg("b", "k1", 0)},
	}
	for _, sched := range []string{"runtime", "plain"} {
		for _, tc := range cases {
			for _, concurrency := range []int{2, 8} {
				t.Run(fmt.Sprintf("%s/%s/c%d", sched, tc.name, concurrency), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						cfg := consumer.Config{Ordering: tc.ordering, Concurrency: concurrency}
						checkRunApart(t, sched == "plain", cfg, tc.a, tc.b)
					})
				})
			}
		}
	}
}

func checkRunApart(t *testing.T, plain bool, cfg consumer.Config, a, b *consumer.Message) {
	src := &propSource{rng: rand.New(rand.NewPCG(1, 1)), leases: map[int32]context.Context{}, revokes: map[int32]context.CancelFunc{}}
	for i, m := range []*consumer.Message{a, b} {
		src.ds = append(src.ds, &propDelivery{m: m, seq: i})
	}
	var (
		mu       sync.Mutex
		started  int
		together = make(chan struct{})
		met      = map[string]bool{}
	)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		mu.Lock()
		if started++; started == 2 {
			close(together)
		}
		mu.Unlock()
		select {
		case <-together:
			mu.Lock()
			met[m.ID] = true
			mu.Unlock()
		case <-time.After(time.Second):
		}
		return nil
	})
	fin := &finals{by: map[*consumer.Message][]consumer.Outcome{}, want: 2, done: make(chan struct{})}
	stop := startConsumer(t, newPropConsumer(t, src, h, cfg, fin, plain))
	<-fin.done
	stop()
	mu.Lock()
	defer mu.Unlock()
	if !met[a.ID] || !met[b.ID] {
		t.Errorf("%s (key %q, partition %d) and %s (key %q, partition %d) did not run at the same time under %s",
			a.ID, a.Key, a.Partition, b.ID, b.Key, b.Partition, cfg.Ordering)
	}
}
