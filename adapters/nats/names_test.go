package nats

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/namestest"
)

// TestStreamNamesInjective: 200,000 random (source, consumer) pairs, the
// source a subject of tokens drawn from '_', '-' and letters, the consumer
// drawn from the same, up to JetStream's 255-byte stream names, and the
// reported pairs ("a_b", "c") and ("a", "b_c"): no two pairs share a retry
// or dead-letter subject or stream. Catches streams named by replacing the
// subject's '.' with '_'.
func TestStreamNamesInjective(t *testing.T) {
	n := namestest.Check(t, namestest.Config{
		Fixed: []namestest.Pair{{Source: "a_b", Consumer: "c"}, {Source: "a", Consumer: "b_c"}, {Source: "a.b", Consumer: "c"}},
		Source: func(r *rand.Rand) string {
			tokens := make([]string, 1+r.IntN(3))
			for i := range tokens {
				tokens[i] = namestest.Name(r, "ab_-", maxStreamName/2)
			}
			return strings.Join(tokens, ".")
		},
		Consumer: func(r *rand.Rand) string { return namestest.Name(r, "ab_-", maxStreamName/2) },
		Names: func(p namestest.Pair) ([]string, bool) {
			if (Config{URL: "u", Source: p.Source, Consumer: p.Consumer}).withDefaults().validate() != nil {
				return nil, false
			}
			var out []string
			for _, subject := range []string{RetrySubject(p.Source, p.Consumer), DeadLetterSubject(p.Source, p.Consumer)} {
				stream := StreamName(subject)
				if len(stream) > maxStreamName {
					return nil, false
				}
				out = append(out, "subject:"+subject, "stream:"+stream)
			}
			return out, true
		},
	})
	if n < 100_000 {
		t.Fatalf("only %d valid pairs", n)
	}
}

// TestStreamNames: sources and consumers without '_' keep the stream names
// of earlier versions, and so do sources' own streams; other pairs' streams
// are escaped and marked with an empty part.
func TestStreamNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{StreamName("orders.created"), "orders_created"},
		{StreamName("order_events"), "order_events"},
		{StreamName(DeadLetterSubject("orders.created", "ledger-eu")), "orders_created_ledger-eu_dlq"},
		{StreamName(RetrySubject("orders", "ledger")), "orders_ledger_retry"},
		{StreamName(DeadLetterSubject("order_events", "ledger")), "order-5fevents_ledger__dlq"},
		{StreamName(RetrySubject("a.b", "c_d-e")), "a_b_c-5fd-2de__retry"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestStreamOfEarlierVersion: a dead-letter stream named by an earlier
// version ("<source>_<consumer>_dlq" for a source with '_') still captures
// the pair's subject; the new stream is refused at start with an error that
// says so and points at the migration, and the old stream keeps its message.
func TestStreamOfEarlierVersion(t *testing.T) {
	nc, err := nats.Connect(envtest.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	source := strings.ReplaceAll(adaptertest.SourceName("old"), "-", "_") + ".order_events"
	subject := DeadLetterSubject(source, "ledger")
	old := strings.ReplaceAll(subject, ".", "_")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: old, Subjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = js.DeleteStream(context.Background(), old) }()
	if _, err := js.Publish(ctx, subject, []byte("dead")); err != nil {
		t.Fatal(err)
	}
	_, err = ensureStream(ctx, js, subject, 0)
	if err == nil || !strings.Contains(err.Error(), "earlier version") || !strings.Contains(err.Error(), subject) {
		t.Fatalf("ensureStream beside the earlier version's stream %s: %v, want an error naming the subject and the earlier version", old, err)
	}
	s, err := js.Stream(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("the earlier version's stream holds %d messages, want 1", n)
	}
}
