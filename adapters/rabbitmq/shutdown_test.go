package rabbitmq

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestGracefulStopLeavesExactlyUnprocessed stops a consumer mid-stream and
// checks the queue then holds exactly the messages the handler did not
// process: no acked message left behind (closing the connection before the
// channel was measured to leave 50–109), none lost.
func TestGracefulStopLeavesExactlyUnprocessed(t *testing.T) {
	for _, qt := range []QueueType{Quorum, Classic} {
		t.Run(string(qt), func(t *testing.T) {
			const n = 2000
			queue := uniqueName("stop")
			all := msgs("m", n)
			cleanupTopology(t, queue, "ledger", testTiers)
			pubQT(t, qt, queue, all...)

			src := newSource(t, Config{Queue: queue, Consumer: "ledger", QueueType: qt, Prefetch: 64})
			processed := newSet()
			_, stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
				processed.add(m.ID)
				return nil
			}), consumer.Config{Name: "ledger", Concurrency: 8, Ordering: consumer.Unordered})
			adaptertest.WaitUntil(t, 30*time.Second, "some messages processed", func() bool { return processed.len() >= n/4 })
			stop()

			done := processed.snapshot()
			if len(done) == n {
				t.Fatalf("all %d messages were processed before the stop took effect; the test checked nothing", n)
			}
			var want []string
			for _, m := range all {
				if c := done[m.ID]; c == 0 {
					want = append(want, m.ID)
				} else if c > 1 {
					t.Errorf("%s processed %d times", m.ID, c)
				}
			}
			// The broker requeues the closed channel's deliveries
			// asynchronously: wait (bounded) for the expected depth.
			deadline := time.Now().Add(10 * time.Second)
			for d := depth(t, queue); d != len(want) && time.Now().Before(deadline); d = depth(t, queue) {
				time.Sleep(20 * time.Millisecond)
			}
			left := drain(t, queue, KeyHeaderDefault)
			var got []string
			for _, m := range left {
				got = append(got, m.ID)
			}
			slices.Sort(got)
			slices.Sort(want)
			t.Logf("processed %d of %d before the stop; the queue holds %d", len(done), n, len(got))
			if !slices.Equal(got, want) {
				t.Errorf("queue holds %d messages, want exactly the %d unprocessed (first extra: %v, first missing: %v)",
					len(got), len(want), firstNotIn(got, want), firstNotIn(want, got))
			}
		})
	}
}

func firstNotIn(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}
