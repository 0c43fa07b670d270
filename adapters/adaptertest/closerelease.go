package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// CloseDeadline bounds how long messages a closed Source held may take to
// reach a new Source: far below any visibility timeout or lease the suite's
// harnesses configure, so a message stranded until its lease expires fails.
const CloseDeadline = 10 * time.Second

// testCloseReleasesAll: Close releases every delivery the Source took,
// including what a Receive still outstanding at Close would take: the
// outstanding Receive returns consumer.ErrSourceClosed without deliveries,
// and a new Source gets every unsettled message within CloseDeadline with its
// Attempt unchanged.
func testCloseReleasesAll(t *testing.T, h Harness) {
	const n, acked = 5, 1
	name := SourceName("closerelease")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("closerelease-%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("body-%d", i))
	}
	h.Publish(t, name, msgs...)

	first := h.NewSource(t, name, ConsumerName)
	got := ReceiveN(t, first, n, WaitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	attempts := make(map[string]int)
	for i, d := range got {
		m := d.Message()
		if i < acked {
			if err := d.Ack(ctx); err != nil {
				t.Fatalf("ack %s: %v", m.ID, err)
			}
			continue
		}
		attempts[m.ID] = m.Attempt
	}

	// One more Receive is outstanding, as the runtime always has one.
	type result struct {
		ds  []consumer.Delivery
		err error
	}
	pending := make(chan result, 1)
	go func() {
		ds, err := first.Receive(ctx, n)
		pending <- result{ds, err}
	}()
	select {
	case r := <-pending:
		t.Fatalf("Receive with nothing to deliver returned %d deliveries, error %v, before Close", len(r.ds), r.err)
	case <-time.After(QuietWindow / 2):
	}
	closeSource(t, first)
	select {
	case r := <-pending:
		if len(r.ds) > 0 || !errors.Is(r.err, consumer.ErrSourceClosed) {
			t.Errorf("the Receive outstanding at Close returned %d deliveries and %v, want none and consumer.ErrSourceClosed", len(r.ds), r.err)
		}
	case <-time.After(CloseDeadline):
		t.Fatalf("the Receive outstanding at Close did not return within %s", CloseDeadline)
	}

	second := h.NewSource(t, name, ConsumerName)
	start := time.Now()
	again := ReceiveN(t, second, n-acked, CloseDeadline)
	t.Logf("a new Source got the %d released messages %s after Close", n-acked, time.Since(start).Round(time.Millisecond))
	for _, d := range again {
		m := d.Message()
		was, ok := attempts[m.ID]
		if !ok {
			t.Errorf("got %q, which was acked, twice, or never published", m.ID)
		} else if m.Attempt != was {
			t.Errorf("%s came back with Attempt %d, was %d", m.ID, m.Attempt, was)
		}
		delete(attempts, m.ID)
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("ack %s: %v", m.ID, err)
		}
	}
	AssertQuiet(t, second, QuietWindow)
	closeSource(t, second)
}
