package adaptertest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/oncely/oncely/consumer"
)

// testMissingID: a message without ID is dead-lettered with reason
// missing-id and never reaches the handler. Catches: an empty ID handed to
// the handler (and to a store, which keys claims by it).
func testMissingID(t *testing.T, h Harness) {
	name := SourceName("noid")
	m, _, handled := deadLetterOne(t, h, name, 1, msg("", "k", "no-id-body"), msg("has-id", "k", "ok-body"))
	if m.ID != "" || string(m.Body) != "no-id-body" || m.Key != "k" {
		t.Errorf("dead letter ID %q key %q body %q, want \"\" \"k\" \"no-id-body\"", m.ID, m.Key, m.Body)
	}
	if r := m.Header(consumer.HeaderDeadLetterReason); r != consumer.ReasonMissingID {
		t.Errorf("reason %q, want %q", r, consumer.ReasonMissingID)
	}
	if m.Header(consumer.HeaderConsumer) != ConsumerName || m.Header(consumer.HeaderOriginalSource) != name {
		t.Errorf("headers %v lack consumer/original source", m.Headers)
	}
	if !slices.Equal(handled, []string{"has-id"}) {
		t.Errorf("handler saw %q, want only [has-id]", handled)
	}
}

// invalidID is an ID every supported broker carries (SQS attributes allow
// TAB, LF and CR below U+0020, nothing else) and the runtime refuses: it
// holds a control character.
const invalidID = "tab\tid"

// testInvalidID: the message with invalidID, published in one batch between
// valid messages of its key, is dead-lettered with reason invalid-id before
// any attempt, its ID, key and body kept; the others are each handled once,
// in publish order. Catches: IDs checked for emptiness or length only (the
// message reaches the handler), and a refused message that stalls its key or
// its batch (the messages after it are never handled).
func testInvalidID(t *testing.T, h Harness) {
	name := SourceName("badid")
	bad := msg(invalidID, "k", "invalid-id-body")
	m, src, handled := deadLetterOne(t, h, name, 3, msg("before", "k", "b"), bad, msg("after-1", "k", "b"), msg("after-2", "k", "b"))
	if m.ID != bad.ID || string(m.Body) != string(bad.Body) || m.Key != bad.Key {
		t.Errorf("dead letter ID %q key %q body %q, want %q %q %q", m.ID, m.Key, m.Body, bad.ID, bad.Key, bad.Body)
	}
	if r := m.Header(consumer.HeaderDeadLetterReason); r != consumer.ReasonInvalidID {
		t.Errorf("reason %q, want %q", r, consumer.ReasonInvalidID)
	}
	if m.Header(consumer.HeaderError) == "" || m.Header(consumer.HeaderConsumer) != ConsumerName || m.Header(consumer.HeaderOriginalSource) != name {
		t.Errorf("headers %v lack error/consumer/original source", m.Headers)
	}
	if st := src.Stats(); st.Acked != 3 || st.DeadLettered != 1 || st.Retried != 0 || st.Double != 0 || st.Outstanding != 0 {
		t.Errorf("settlements: %+v, want 3 acks and 1 dead letter", st)
	}
	if want := []string{"before", "after-1", "after-2"}; !slices.Equal(handled, want) {
		t.Errorf("handler saw %q, want %q", handled, want)
	}
}

// deadLetterOne publishes msgs to the source name, runs a consumer that
// records the IDs it handles until acked deliveries were acked and one dead
// letter arrived, and returns that dead letter, the counting source and the
// handled IDs in order.
func deadLetterOne(t *testing.T, h Harness, name string, acked int, msgs ...*consumer.Message) (*consumer.Message, *CountingSource, []string) {
	t.Helper()
	h.Publish(t, name, msgs...)
	var mu sync.Mutex
	var handled []string
	src := NewCountingSource(h.NewSource(t, name, ConsumerName))
	stop := run(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, m.ID)
		return nil
	}), consumer.Config{Concurrency: 2})
	dl := h.DeadLetters(t, name, ConsumerName, 1, WaitTimeout)
	waitFor(t, "the messages with a valid ID", func() bool { return src.Stats().Acked >= acked })
	stop()
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	mu.Lock()
	defer mu.Unlock()
	return dl[0], src, slices.Clone(handled)
}
