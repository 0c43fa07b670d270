package adaptertest

import (
	"context"
	"testing"

	"github.com/oncely/oncely/consumer"
)

// RedriveHarness is a Harness whose broker can redrive dead letters the way
// adapters.Broker.Redrive does. RunRedrive needs one.
type RedriveHarness interface {
	Harness

	// Redrive moves every dead letter of (source, name) back to source and
	// returns how many message IDs it republished. It calls progress after
	// each dead letter it looked at (RedriveOptions.Progress), and does not
	// go on while progress runs.
	Redrive(t testing.TB, source, name string, progress func()) (redriven int)
}

// RunRedrive checks that a redrive removes exactly the dead letters it
// republished. The dead-letter destination holds two copies of one message
// (as a crash between a dead-letter publish and its ack leaves); the redrive
// republishes it once, and while the redrive still runs, the republished copy
// fails again and is dead-lettered anew. Afterwards exactly one dead letter
// of that message is left: the new one, with the new failure.
func RunRedrive(t *testing.T, h RedriveHarness) {
	name := SourceName("redrive")
	const id = "redrive-1"
	h.Publish(t, name, msg(id, "k", "body"), msg(id, "k", "body"))

	src := h.NewSource(t, name, ConsumerName)
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	for _, d := range ReceiveN(t, src, 2, WaitTimeout) {
		if err := d.DeadLetter(ctx, deadLetterHeaders(d.Message(), "first failure")); err != nil {
			t.Fatalf("dead-letter %s: %v", id, err)
		}
	}
	if dl := h.DeadLetters(t, name, ConsumerName, 2, WaitTimeout); len(dl) != 2 {
		t.Fatalf("%d dead letters before the redrive, want the 2 copies", len(dl))
	}

	calls := 0
	redriven := h.Redrive(t, name, ConsumerName, func() {
		calls++
		if calls != 1 {
			return
		}
		// The first dead letter looked at was republished: fail it again.
		d := ReceiveN(t, src, 1, WaitTimeout)[0]
		m := d.Message()
		if m.ID != id || m.Attempt != 1 || m.Header(consumer.HeaderError) != "" {
			t.Errorf("the redriven copy is %q with Attempt %d and error %q, want %q with Attempt 1 and no failure headers", m.ID, m.Attempt, m.Header(consumer.HeaderError), id)
		}
		if err := d.DeadLetter(ctx, deadLetterHeaders(m, "failed again")); err != nil {
			t.Errorf("dead-letter the redriven copy: %v", err)
		}
	})
	if redriven != 1 {
		t.Errorf("redrive republished %d messages, want 1 (the second copy is a duplicate)", redriven)
	}
	AssertQuiet(t, src, QuietWindow)
	closeSource(t, src)

	dl := h.DeadLetters(t, name, ConsumerName, 2, QuietWindow)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters after the redrive, want exactly the new one", len(dl))
	}
	if m := dl[0]; m.ID != id || m.Header(consumer.HeaderError) != "failed again" {
		t.Errorf("the dead letter left is %q with error %q, want %q with the new failure", m.ID, m.Header(consumer.HeaderError), id)
	}
}
