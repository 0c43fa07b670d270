package retry

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Tiers are the fixed delays of broker-side retry destinations (Kafka retry
// topics, RabbitMQ TTL queues). A retry due after d goes to Tier(d).
type Tiers []time.Duration

// DefaultTiers are used by adapters whose broker has no native per-message
// delay: 1s, 10s, 1m, 10m, 1h.
var DefaultTiers = Tiers{time.Second, 10 * time.Second, time.Minute, 10 * time.Minute, time.Hour}

// Validate reports tiers that are empty, not positive, or not strictly
// increasing.
func (t Tiers) Validate() error {
	if len(t) == 0 {
		return fmt.Errorf("retry: no delay tiers")
	}
	for i, d := range t {
		if d <= 0 {
			return fmt.Errorf("retry: tier %d is %s; tiers must be positive", i, d)
		}
		if i > 0 && d <= t[i-1] {
			return fmt.Errorf("retry: tiers must be strictly increasing, %s follows %s", d, t[i-1])
		}
	}
	return nil
}

// Tier returns the smallest tier >= d, so a retry is never early, or the
// largest tier when d exceeds them all (the consumer of that tier then waits
// for the remaining time given by the not-before header).
func (t Tiers) Tier(d time.Duration) time.Duration {
	i, _ := slices.BinarySearch(t, d)
	if i == len(t) {
		return t[len(t)-1]
	}
	return t[i]
}

// Upto returns the tiers a retry after at most d can use: every tier up to
// and including the first one >= d (all of them when d exceeds the largest),
// and at least the smallest. Tier and Nearest on the result never pick a
// tier shorter than they would on t for a delay up to d, and a longer delay
// goes to its largest tier.
func (t Tiers) Upto(d time.Duration) Tiers {
	i, _ := slices.BinarySearch(t, d)
	return t[:min(max(i+1, 1), len(t))]
}

// Nearest returns the tier nearest to d on a logarithmic scale: between
// tiers a < b, d goes to b from sqrt(a×b) on, so the retry comes at most
// sqrt(b/a) times early or late (about 3.2× with DefaultTiers). A d below
// the smallest tier gets the smallest, above the largest the largest.
// Brokers that wait exactly a tier use it for a policy's delay: the default
// policy's first delay, 1s ± 20 %, then goes to the 1s tier every time
// instead of to 1s or 10s by the draw of its jitter.
func (t Tiers) Nearest(d time.Duration) time.Duration {
	i, _ := slices.BinarySearch(t, d)
	switch {
	case i == 0:
		return t[0]
	case i == len(t):
		return t[len(t)-1]
	}
	lo, hi := t[i-1], t[i]
	if float64(d) >= math.Sqrt(float64(lo))*math.Sqrt(float64(hi)) {
		return hi
	}
	return lo
}

// Choose is the tier a broker that waits exactly a tier retries after when
// the runtime asks for about d and no less than atLeast (a handler's
// RetryAfter): Nearest(d), or Tier(atLeast) when that is later.
func (t Tiers) Choose(d, atLeast time.Duration) time.Duration {
	if atLeast <= 0 {
		return t.Nearest(d)
	}
	return max(t.Nearest(d), t.Tier(atLeast))
}

// Name formats a tier delay for a destination name: "500ms", "10s", "5m", "2h".
func Name(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	default:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
}
