package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// TestPoisonNoCollateral puts one poison message in front of 100 good ones
// at prefetch 10 with a handler that always fails on the poison: the 100 are
// processed once each, the poison reaches the dead-letter queue after
// MaxAttempts, and none of its neighbours is dead-lettered with it. (The
// seed measured 9 of 9 neighbours lost on a plain quorum queue whose
// consumer crashed on the poison; oncely never returns a message to the
// broker, it retries through the TTL queues.)
func TestPoisonNoCollateral(t *testing.T) {
	for _, qt := range []QueueType{Quorum, Classic} {
		t.Run(string(qt), func(t *testing.T) {
			const good, maxAttempts = 100, 3
			queue := uniqueName("poison")
			all := append([]*consumer.Message{{ID: "poison", Body: []byte("poison"), Partition: -1, Offset: -1}}, msgs("good", good)...)
			cleanupTopology(t, queue, "ledger", testTiers)
			pubQT(t, qt, queue, all...)

			src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 10, QueueType: qt})
			handled := newSet()
			obs := newCounter()
			_, stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
				handled.add(m.ID)
				if m.ID == "poison" {
					return errors.New("poison: cannot process")
				}
				return nil
			}), consumer.Config{Name: "ledger", Concurrency: 4, MaxInFlight: 10, Observer: obs, Retry: retry.Policy{
				MaxAttempts: maxAttempts, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond, Jitter: retry.NoJitter,
			}})
			adaptertest.WaitUntil(t, 30*time.Second, "the poison to be dead-lettered and every good message processed", func() bool {
				return obs.get(consumer.OutcomeDeadLettered) == 1 && obs.get(consumer.OutcomeProcessed) == good
			})
			stop()

			for i := range good {
				id := fmt.Sprintf("good-%05d", i)
				if n := handled.count(id); n != 1 {
					t.Errorf("%s handled %d times, want 1", id, n)
				}
			}
			if n := handled.count("poison"); n != maxAttempts {
				t.Errorf("poison handled %d times, want %d", n, maxAttempts)
			}
			dl := browse(t, DeadLetterQueue(queue, "ledger"), KeyHeaderDefault)
			collateral := 0
			for _, m := range dl {
				if m.ID != "poison" {
					collateral++
				}
			}
			t.Logf("dead-letter queue: %d message(s), collateral (good messages dead-lettered): %d", len(dl), collateral)
			if len(dl) != 1 || dl[0].ID != "poison" {
				t.Fatalf("dead-letter queue holds %d messages (collateral %d), want only the poison", len(dl), collateral)
			}
			p := dl[0]
			for k, want := range map[string]string{
				consumer.HeaderDeadLetterReason: consumer.ReasonExhausted,
				consumer.HeaderAttempt:          fmt.Sprint(maxAttempts),
				consumer.HeaderError:            "poison: cannot process",
				consumer.HeaderConsumer:         "ledger",
				consumer.HeaderOriginalSource:   queue,
			} {
				if got := p.Header(k); got != want {
					t.Errorf("poison header %s = %q, want %q", k, got, want)
				}
			}
			if d := depth(t, queue); d != 0 {
				t.Errorf("source queue holds %d messages, want 0", d)
			}
			if obs.get(consumer.OutcomeRetried) != maxAttempts-1 {
				t.Errorf("%d retries, want %d", obs.get(consumer.OutcomeRetried), maxAttempts-1)
			}
		})
	}
}

// pubQT publishes with a Publisher declaring queues of type qt.
func pubQT(t testing.TB, qt QueueType, queue string, ms ...*consumer.Message) {
	t.Helper()
	if qt == Quorum {
		publish(t, queue, ms...)
		return
	}
	p, err := NewPublisher(PublisherConfig{URL: testURL(t), QueueType: qt, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Publish(ctx, queue, ms...); err != nil {
		t.Fatal(err)
	}
}
