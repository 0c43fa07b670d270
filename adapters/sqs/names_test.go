package sqs

import (
	"math/rand/v2"
	"testing"

	"github.com/oncely/oncely/internal/namestest"
)

// TestDeadLetterNamesInjective: 200,000 random (queue, consumer) pairs, the
// queue drawn from '-', '_' and letters (a FIFO queue in one of four), the
// consumer from those and '.', up to SQS's 80 characters, and the reported
// pairs ("a-b", "c") and ("a", "b-c"): no two pairs share a dead-letter
// queue. Catches a plain join "<queue>-<consumer>-dlq" and a long name cut
// to fit.
func TestDeadLetterNamesInjective(t *testing.T) {
	n := namestest.Check(t, namestest.Config{
		Fixed: []namestest.Pair{{Source: "a-b", Consumer: "c"}, {Source: "a", Consumer: "b-c"}, {Source: "a", Consumer: "b.c"}},
		Source: func(r *rand.Rand) string {
			q := namestest.Name(r, "ab-_", maxQueueName)
			if r.IntN(4) == 0 {
				q += ".fifo"
			}
			return q
		},
		Consumer: func(r *rand.Rand) string { return namestest.Name(r, "ab-_.", maxQueueName) },
		Names: func(p namestest.Pair) ([]string, bool) {
			if !ValidQueueName(p.Source) {
				return nil, false
			}
			name, err := DeadLetterQueueName(p.Source, p.Consumer)
			if err != nil {
				return nil, false
			}
			if !ValidQueueName(name) {
				t.Fatalf("dead-letter queue %q of (%q, %q) is not a valid SQS name", name, p.Source, p.Consumer)
			}
			return []string{name}, true
		},
	})
	if n < 100_000 {
		t.Fatalf("only %d valid pairs", n)
	}
}

// TestDeadLetterQueueConsumerReadsBack: DeadLetterQueueConsumer returns the
// consumer of every dead-letter queue DeadLetterQueueName names, escaped or
// not, and refuses names it did not derive.
func TestDeadLetterQueueConsumerReadsBack(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		queue, consumer := namestest.Name(r, "ab-_", 30), namestest.Name(r, "ab.-_", 30)
		if queue == "" || consumer == "" {
			continue
		}
		if r.IntN(2) == 0 {
			queue += ".fifo"
		}
		name, err := DeadLetterQueueName(queue, consumer)
		if err != nil {
			continue // too long: refused, never derived
		}
		got, ok := DeadLetterQueueConsumer(queue, name)
		if !ok || got != consumer {
			t.Fatalf("DeadLetterQueueConsumer(%q, %q) = %q, %v; want %q", queue, name, got, ok, consumer)
		}
	}
	if _, ok := DeadLetterQueueConsumer("q", "q-named-by-hand"); ok {
		t.Fatal("a hand-named queue read back as a consumer's")
	}
}
