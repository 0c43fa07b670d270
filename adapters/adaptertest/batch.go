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

// testBatches runs a consumer.BatchHandler over the adapter: 240 messages on
// 8 keys in batches of at most 32 (or the adapter's prefetch), three batches at once, with one poison
// message (its batches fail as a whole, so the runtime bisects) and one the
// handler names in a consumer.BatchError as permanent. Bugs caught: an ack
// sent before the handler's batch returned (before its transaction
// committed), a batch-mate of a failed message retried, dead-lettered or
// never acked, a key's messages committed out of order, an adapter whose
// coalesced acks (Kafka commits, AMQP multiple acks, SQS batch deletes)
// leave a message to come back on a new Source.
func testBatches(t *testing.T, h Harness) {
	const n, keys = 240, 8
	name := SourceName("batches")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("batch-%03d", i), fmt.Sprintf("key-%d", i%keys), strconv.Itoa(i/keys))
	}
	poison, named := msgs[77].ID, msgs[150].ID
	h.Publish(t, name, msgs...)

	var mu sync.Mutex
	committed := make(map[string]int)
	seqs := make(map[string][]int)
	var early []string
	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	src.BeforeAck = func(m *consumer.Message) {
		mu.Lock()
		defer mu.Unlock()
		if committed[m.ID] == 0 {
			early = append(early, m.ID)
		}
	}
	bh := consumer.BatchHandlerFunc(func(_ context.Context, batch []*consumer.Message) error {
		for i, m := range batch {
			if m.ID == named {
				return consumer.BatchError{Failed: map[int]error{i: consumer.Permanent(errors.New("named by the batch handler"))}}
			}
			if m.ID == poison {
				return errors.New("a poison message in the batch")
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range batch {
			committed[m.ID]++
			seq, _ := strconv.Atoi(string(m.Body))
			seqs[m.Key] = append(seqs[m.Key], seq)
		}
		return nil
	})
	size := 32
	if p := src.Capabilities().Prefetch; p > 0 {
		size = min(size, p) // a batch the broker's prefetch can fill
	}
	stop := run(t, src, bh, consumer.Config{Concurrency: 3, BatchSize: size, BatchMaxWait: 5 * time.Millisecond,
		Retry: retry.Policy{MaxAttempts: 1}})
	waitFor(t, "every message settled", func() bool {
		st := src.Stats()
		return st.Acked+st.DeadLettered >= n
	})
	stop()

	st := src.Stats()
	if st.Acked != n-2 || st.DeadLettered != 2 || st.Retried != 0 || st.Double != 0 || st.Outstanding != 0 {
		t.Errorf("settlements: %+v, want %d acks and 2 dead letters", st, n-2)
	}
	mu.Lock()
	if len(early) > 0 {
		t.Errorf("%d acks before their batch returned, the first %v", len(early), early[:min(len(early), 8)])
	}
	for _, m := range msgs {
		want := 1
		if m.ID == poison || m.ID == named {
			want = 0
		}
		if committed[m.ID] != want {
			t.Errorf("%s committed %d times, want %d", m.ID, committed[m.ID], want)
		}
	}
	for k, got := range seqs {
		if !slices.IsSorted(got) {
			t.Errorf("%s committed in order %v", k, got)
		}
	}
	mu.Unlock()

	dls := h.DeadLetters(t, name, ConsumerName, 2, WaitTimeout)
	reasons := map[string]string{}
	for _, d := range dls {
		reasons[d.ID] = d.Headers[consumer.HeaderDeadLetterReason]
	}
	if want := map[string]string{poison: consumer.ReasonExhausted, named: consumer.ReasonPermanent}; !maps.Equal(reasons, want) {
		t.Errorf("dead letters %v, want %v", reasons, want)
	}
	again := h.NewSource(t, name, ConsumerName)
	AssertQuiet(t, again, QuietWindow)
	closeSource(t, again)
}
