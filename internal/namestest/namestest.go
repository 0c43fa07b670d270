// Package namestest checks that an adapter's derived names (retry and
// dead-letter destinations) are injective: no two (source, consumer) pairs
// share one. It draws many random pairs, most of them short and rich in
// separators so that a join which is not injective collides at once.
package namestest

import (
	"math/rand/v2"
	"testing"
)

// Pair is a source and a consumer name.
type Pair struct{ Source, Consumer string }

// Config is one broker's check.
type Config struct {
	// Pairs is how many random pairs are drawn. Default 200,000.
	Pairs int
	// Fixed are pairs checked before the random ones, such as a reported
	// collision.
	Fixed []Pair
	// Source and Consumer draw a name from r.
	Source, Consumer func(r *rand.Rand) string
	// Names returns the derived names of p, each prefixed with its
	// namespace where the broker has several ("stream:", "subject:"); ok
	// false drops a pair the adapter refuses at start.
	Names func(p Pair) (names []string, ok bool)
	// Coexist reports whether a and b can both exist on one broker, when
	// the broker itself refuses some pairs together (Kafka refuses topics
	// that differ only by '.' and '_'). Default: always.
	Coexist func(a, b Pair) bool
}

// Check draws cfg.Pairs pairs (seeded, so a failure repeats) and fails t
// with the first two pairs that share a derived name (or one pair whose
// names repeat). It returns how many distinct pairs were accepted.
func Check(t testing.TB, cfg Config) int {
	t.Helper()
	if cfg.Pairs == 0 {
		cfg.Pairs = 200_000
	}
	r := rand.New(rand.NewPCG(34, 3))
	owner := map[string]Pair{}
	done := map[Pair]bool{}
	accepted := 0
	check := func(p Pair) bool {
		if done[p] {
			return true
		}
		done[p] = true
		names, ok := cfg.Names(p)
		if !ok {
			return true
		}
		accepted++
		for _, n := range names {
			other, seen := owner[n]
			if seen && (other == p || cfg.Coexist == nil || cfg.Coexist(other, p)) {
				t.Errorf("pairs (source %q, consumer %q) and (source %q, consumer %q) share the derived name %q (after %d pairs)",
					other.Source, other.Consumer, p.Source, p.Consumer, n, accepted)
				return false
			}
			owner[n] = p
		}
		return true
	}
	for _, p := range cfg.Fixed {
		if !check(p) {
			return accepted
		}
	}
	for range cfg.Pairs {
		if !check(Pair{cfg.Source(r), cfg.Consumer(r)}) {
			return accepted
		}
	}
	t.Logf("%d distinct pairs accepted, no derived name shared", accepted)
	return accepted
}

// Name draws a name from alphabet: nine in ten are 1 to 6 bytes long, the
// others up to max bytes, so that short names collide often and long ones
// reach the broker's limit.
func Name(r *rand.Rand, alphabet string, max int) string {
	n := 1 + r.IntN(6)
	if r.IntN(10) == 0 {
		n = 1 + r.IntN(max)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}
