package rabbitmq

import (
	"math/rand/v2"
	"testing"

	"github.com/oncely/oncely/internal/namestest"
	"github.com/oncely/oncely/retry"
)

// TestQueueNamesInjective: 200,000 random (queue, consumer) pairs drawn
// from '.', '_', '-', ' ' and letters, up to AMQP's 255 bytes, and the
// reported pairs ("a.b", "c") and ("a", "b.c"): no two pairs share a retry
// or dead-letter queue. Catches a plain join "<queue>.<consumer>.dlq", under
// which a redrive of one consumer's dead letters lands in the other's
// source.
func TestQueueNamesInjective(t *testing.T) {
	tiers := retry.DefaultTiers
	n := namestest.Check(t, namestest.Config{
		Fixed:    []namestest.Pair{{Source: "a.b", Consumer: "c"}, {Source: "a", Consumer: "b.c"}},
		Source:   func(r *rand.Rand) string { return namestest.Name(r, "ab.-_ ", maxShortString) },
		Consumer: func(r *rand.Rand) string { return namestest.Name(r, "ab.-_ ", maxShortString) },
		Names: func(p namestest.Pair) ([]string, bool) {
			out := append(topology{queue: p.Source, consumer: p.Consumer, tiers: tiers}.retryNames(), DeadLetterQueue(p.Source, p.Consumer))
			for _, name := range out {
				if len(name) > maxShortString {
					return nil, false
				}
			}
			return out, true
		},
	})
	if n < 100_000 {
		t.Fatalf("only %d valid pairs", n)
	}
}

// TestQueueNames: consumer names without '.' keep the names of earlier
// versions; others are escaped and marked with an empty part.
func TestQueueNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{DeadLetterQueue("payments.v1", "ledger_eu-1"), "payments.v1.ledger_eu-1.dlq"},
		{RetryQueue("payments", "ledger", retry.DefaultTiers[0]), "payments.ledger.retry.1s"},
		{DeadLetterQueue("a", "b.c"), "a.b_2ec..dlq"},
		{RetryQueue("a", "b.c_d", retry.DefaultTiers[0]), "a.b_2ec_5fd..retry.1s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
