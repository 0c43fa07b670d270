package redis

import (
	"math/rand/v2"
	"testing"

	"github.com/oncely/oncely/internal/namestest"
)

// TestKeyNamesInjective: 200,000 random (stream, consumer) pairs drawn from
// '.', '_', '-', ':' and letters, up to 300 bytes, and the reported pairs
// ("a.b", "c") and ("a", "b.c"): no two pairs share a retry stream, delayed
// set or dead-letter stream. Catches a plain join "<stream>.<consumer>.dlq".
func TestKeyNamesInjective(t *testing.T) {
	n := namestest.Check(t, namestest.Config{
		Fixed:    []namestest.Pair{{Source: "a.b", Consumer: "c"}, {Source: "a", Consumer: "b.c"}},
		Source:   func(r *rand.Rand) string { return namestest.Name(r, "ab.-_:", 300) },
		Consumer: func(r *rand.Rand) string { return namestest.Name(r, "ab.-_:", 300) },
		Names: func(p namestest.Pair) ([]string, bool) {
			return []string{RetryStream(p.Source, p.Consumer), DelayedKey(p.Source, p.Consumer), DeadLetterStream(p.Source, p.Consumer), LiveKey(p.Source, p.Consumer)}, true
		},
	})
	if n < 100_000 {
		t.Fatalf("only %d pairs", n)
	}
}

// TestKeyNames: consumer names without '.' keep the keys of earlier
// versions; others are escaped and marked with an empty part.
func TestKeyNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{DeadLetterStream("orders.v1", "ledger_eu-1"), "orders.v1.ledger_eu-1.dlq"},
		{RetryStream("orders", "ledger"), "orders.ledger.retry"},
		{DelayedKey("a", "b.c"), "a.b_2ec..delayed"},
		{DeadLetterStream("a", "b.c_d"), "a.b_2ec_5fd..dlq"},
		{LiveKey("{orders}", "ledger"), "{orders}.ledger.live"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
