package retry

import (
	"fmt"
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
