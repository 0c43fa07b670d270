package adaptertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

func testSettleOnce(t *testing.T, h Harness) {
	const n = 100
	name := SourceName("settle")
	msgs := make([]*consumer.Message, n)
	bodies := make(map[string]string, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("settle-%03d", i), fmt.Sprintf("k%d", i%10), fmt.Sprintf("body-%d", i))
		bodies[msgs[i].ID] = string(msgs[i].Body)
	}
	h.Publish(t, name, msgs...)

	var mu sync.Mutex
	handled := make(map[string]int)
	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	stop := run(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled[m.ID]++
		if want := bodies[m.ID]; string(m.Body) != want {
			t.Errorf("%s: body %q, want %q", m.ID, m.Body, want)
		}
		return nil
	}), consumer.Config{Concurrency: 8})
	waitFor(t, "every message to be acked", func() bool { return src.Stats().Acked >= n })
	stop()

	st := src.Stats()
	if st.Acked != n || st.Retried != 0 || st.DeadLettered != 0 || st.Double != 0 || st.Outstanding != 0 {
		t.Errorf("settlements: %+v, want %d acks and nothing else", st, n)
	}
	mu.Lock()
	for _, m := range msgs {
		if handled[m.ID] != 1 {
			t.Errorf("%s handled %d times, want 1", m.ID, handled[m.ID])
		}
	}
	if len(handled) != n {
		t.Errorf("handled %d distinct IDs, want %d", len(handled), n)
	}
	mu.Unlock()

	again := h.NewSource(t, name, ConsumerName)
	AssertQuiet(t, again, QuietWindow)
	closeSource(t, again)
	if dl := h.DeadLetters(t, name, ConsumerName, 0, 0); len(dl) != 0 {
		t.Errorf("%d dead letters, want none", len(dl))
	}
}

func testRedelivery(t *testing.T, h Harness) {
	const n = 5
	name := SourceName("redeliver")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("redeliver-%d", i), "one-key", fmt.Sprintf("body-%d", i))
	}
	h.Publish(t, name, msgs...)

	first := h.NewSource(t, name, ConsumerName)
	got := ReceiveN(t, first, n, WaitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	attempts := make(map[string]int)
	for i, d := range got {
		m := d.Message()
		if m.Attempt < 1 {
			t.Errorf("%s: first delivery has Attempt %d, want >= 1", m.ID, m.Attempt)
		}
		attempts[m.ID] = m.Attempt
		if i < 2 {
			if err := d.Ack(ctx); err != nil {
				t.Fatalf("ack %s: %v", m.ID, err)
			}
		}
	}
	closeSource(t, first)

	second := h.NewSource(t, name, ConsumerName)
	again := ReceiveN(t, second, n-2, WaitTimeout)
	want := make(map[string]*consumer.Message)
	for _, d := range got[2:] {
		want[d.Message().ID] = d.Message()
	}
	for _, d := range again {
		m := d.Message()
		w, ok := want[m.ID]
		if !ok {
			t.Errorf("redelivered %q, which was acked or never published", m.ID)
			continue
		}
		delete(want, m.ID)
		if m.Key != w.Key || string(m.Body) != string(w.Body) {
			t.Errorf("%s redelivered with key %q body %q, want %q %q", m.ID, m.Key, m.Body, w.Key, w.Body)
		}
		if m.Attempt < 1 || m.Attempt < attempts[m.ID] {
			t.Errorf("%s redelivered with Attempt %d, was %d", m.ID, m.Attempt, attempts[m.ID])
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("ack %s: %v", m.ID, err)
		}
	}
	for id := range want {
		t.Errorf("%s was not redelivered", id)
	}
	AssertQuiet(t, second, QuietWindow)
	closeSource(t, second)
}

func testKeyOrder(t *testing.T, h Harness) {
	const n, keys = 300, 6
	name := SourceName("order")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("order-%03d", i), fmt.Sprintf("key-%d", i%keys), strconv.Itoa(i/keys))
	}
	h.Publish(t, name, msgs...)

	var mu sync.Mutex
	seqs := make(map[string][]int)
	handled := 0
	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	stop := run(t, src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		seq, err := strconv.Atoi(string(m.Body))
		if err != nil {
			return consumer.Permanent(err)
		}
		mu.Lock()
		defer mu.Unlock()
		seqs[m.Key] = append(seqs[m.Key], seq)
		handled++
		return nil
	}), consumer.Config{Concurrency: 8})
	waitFor(t, "every message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled >= n
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		got := seqs[key]
		want := make([]int, n/keys)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s handled in order %v, want %v", key, got, want)
		}
	}
}
