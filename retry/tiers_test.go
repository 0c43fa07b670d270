package retry_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/retry"
)

func TestTierNeverEarly(t *testing.T) {
	tiers := retry.Tiers{time.Second, 10 * time.Second, time.Minute, 10 * time.Minute}
	require.NoError(t, tiers.Validate())
	cases := map[time.Duration]time.Duration{
		-time.Second:                     time.Second,
		0:                                time.Second,
		time.Nanosecond:                  time.Second,
		time.Second:                      time.Second,
		time.Second + 1:                  10 * time.Second,
		10 * time.Second:                 10 * time.Second,
		59 * time.Second:                 time.Minute,
		10 * time.Minute:                 10 * time.Minute,
		10*time.Minute + time.Nanosecond: 10 * time.Minute, // beyond the largest tier
		24 * time.Hour:                   10 * time.Minute,
	}
	for d, want := range cases {
		require.Equal(t, want, tiers.Tier(d), "Tier(%s)", d)
	}

	// Property: for any delay up to the largest tier, the tier is >= the delay
	// and it is the smallest such tier.
	r := rand.New(rand.NewPCG(1, 2))
	largest := tiers[len(tiers)-1]
	for range 10000 {
		d := time.Duration(r.Int64N(int64(largest) + 1))
		got := tiers.Tier(d)
		require.GreaterOrEqual(t, got, d)
		for _, tier := range tiers {
			if tier >= d {
				require.Equal(t, tier, got, "Tier(%s) must be the smallest tier >= it", d)
				break
			}
		}
	}
	// And every delay of a policy whose longest delay fits the tiers maps to a
	// tier that is not early.
	p := retry.Policy{MaxAttempts: 8, InitialInterval: time.Second, MaxInterval: 5 * time.Minute}
	require.LessOrEqual(t, p.LongestDelay(), largest)
	for n := 1; n < p.MaxAttempts; n++ {
		for range 100 {
			d := p.Delay(n, r)
			require.GreaterOrEqual(t, tiers.Tier(d), d)
		}
	}
}

func TestTiersValidate(t *testing.T) {
	require.NoError(t, retry.DefaultTiers.Validate())
	require.NoError(t, retry.Tiers{time.Millisecond}.Validate())
	cases := map[string]struct {
		tiers retry.Tiers
		want  string
	}{
		"empty":      {nil, "retry: no delay tiers"},
		"zero":       {retry.Tiers{0, time.Second}, "retry: tier 0 is 0s; tiers must be positive"},
		"negative":   {retry.Tiers{time.Second, -time.Second}, "retry: tier 1 is -1s; tiers must be positive"},
		"unsorted":   {retry.Tiers{10 * time.Second, time.Second}, "retry: tiers must be strictly increasing, 1s follows 10s"},
		"duplicated": {retry.Tiers{time.Second, time.Second}, "retry: tiers must be strictly increasing, 1s follows 1s"},
	}
	for name, tc := range cases {
		require.EqualError(t, tc.tiers.Validate(), tc.want, name)
	}
}

func TestName(t *testing.T) {
	cases := map[time.Duration]string{
		500 * time.Millisecond:  "500ms",
		1500 * time.Millisecond: "1500ms",
		time.Second:             "1s",
		90 * time.Second:        "90s",
		5 * time.Minute:         "5m",
		90 * time.Minute:        "90m",
		2 * time.Hour:           "2h",
	}
	for d, want := range cases {
		require.Equal(t, want, retry.Name(d), "Name(%s)", d)
	}
}

func ExampleTiers_Tier() {
	tiers := retry.Tiers{time.Second, 10 * time.Second, time.Minute}
	for _, d := range []time.Duration{300 * time.Millisecond, 4 * time.Second, 10 * time.Second, time.Hour} {
		fmt.Printf("%s -> %s\n", d, retry.Name(tiers.Tier(d)))
	}
	// Output:
	// 300ms -> 1s
	// 4s -> 10s
	// 10s -> 10s
	// 1h0m0s -> 1m
}

func ExamplePolicy_Delay() {
	p := retry.Policy{MaxAttempts: 4, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, Jitter: 0.2}
	for n := 1; n < p.MaxAttempts; n++ {
		fmt.Printf("after attempt %d: %s ±20%%\n", n, p.BaseDelay(n))
	}
	// The same seed always gives the same jittered delay.
	a := p.Delay(2, rand.New(rand.NewPCG(1, 1)))
	b := p.Delay(2, rand.New(rand.NewPCG(1, 1)))
	fmt.Println("deterministic:", a == b, "within bounds:", a >= 160*time.Millisecond && a <= 240*time.Millisecond)
	fmt.Println("dead-letter after attempt 4:", p.Exhausted(4))
	// Output:
	// after attempt 1: 100ms ±20%
	// after attempt 2: 200ms ±20%
	// after attempt 3: 400ms ±20%
	// deterministic: true within bounds: true
	// dead-letter after attempt 4: true
}

// TestNearestTier: a policy's delay goes to the tier nearest on a log scale,
// so the default policy's first retry (1s ± 20 %) always takes the 1s tier.
// Catches: rounding up (1.1s to the 10s tier, issue 23) and a linear
// midpoint (4s to the 1s tier).
func TestNearestTier(t *testing.T) {
	tiers := retry.DefaultTiers
	cases := map[time.Duration]time.Duration{
		0:                       time.Second,
		800 * time.Millisecond:  time.Second,
		1100 * time.Millisecond: time.Second,
		1200 * time.Millisecond: time.Second,
		3 * time.Second:         time.Second,
		3200 * time.Millisecond: 10 * time.Second, // sqrt(1s×10s) ≈ 3.16s
		8 * time.Second:         10 * time.Second,
		30 * time.Second:        time.Minute, // sqrt(10s×60s) ≈ 24.5s
		20 * time.Second:        10 * time.Second,
		5 * time.Hour:           time.Hour,
	}
	for d, want := range cases {
		require.Equal(t, want, tiers.Nearest(d), "Nearest(%s)", d)
	}
	p := retry.Policy{}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		require.Equal(t, time.Second, tiers.Nearest(p.Delay(1, r)), "the default policy's first delay takes the 1s tier")
	}
	// Choose keeps a RetryAfter floor: never a tier below it.
	require.Equal(t, time.Second, tiers.Choose(1100*time.Millisecond, 0))
	require.Equal(t, 10*time.Second, tiers.Choose(1100*time.Millisecond, 3*time.Second))
	require.Equal(t, time.Minute, tiers.Choose(40*time.Second, 2*time.Second))
}
