package adaptertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/oncely/oncely/consumer"
)

// CloseRounds is how often the CloseKeepsAttempt case closes a Source over
// received, unhandled deliveries.
const CloseRounds = 3

// testCloseKeepsAttempt: Message.Attempt counts handler attempts, so clean
// closes never raise it. CloseRounds times a Source receives some messages
// (more may be prefetched) and closes without settling any; then every
// message still comes with Attempt 1.
func testCloseKeepsAttempt(t *testing.T, h Harness) {
	const n, take = 5, 2
	name := SourceName("closeattempt")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("closeattempt-%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("body-%d", i))
	}
	h.Publish(t, name, msgs...)

	for round := 1; round <= CloseRounds; round++ {
		src := h.NewSource(t, name, ConsumerName)
		for _, d := range ReceiveN(t, src, take, WaitTimeout) {
			if m := d.Message(); m.Attempt != 1 {
				t.Errorf("round %d: %s has Attempt %d after %d clean closes, want 1", round, m.ID, m.Attempt, round-1)
			}
		}
		closeSource(t, src)
	}

	src := h.NewSource(t, name, ConsumerName)
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	seen := make(map[string]bool)
	for _, d := range ReceiveN(t, src, n, WaitTimeout) {
		m := d.Message()
		if m.Attempt != 1 {
			t.Errorf("%s has Attempt %d after %d clean closes, want 1", m.ID, m.Attempt, CloseRounds)
		}
		if seen[m.ID] {
			t.Errorf("%s delivered twice by one Source", m.ID)
		}
		seen[m.ID] = true
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("ack %s: %v", m.ID, err)
		}
	}
	AssertQuiet(t, src, QuietWindow)
	closeSource(t, src)
}
