package retry_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/retry"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func TestBaseDelayGrowsAndCaps(t *testing.T) {
	p := retry.Policy{InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, Multiplier: 2}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, w := range want {
		require.Equal(t, w*time.Millisecond, p.BaseDelay(i+1), "attempt %d", i+1)
	}
	require.Equal(t, time.Second, p.BaseDelay(1000), "capped at MaxInterval")

	p3 := retry.Policy{InitialInterval: time.Second, MaxInterval: time.Hour, Multiplier: 3}
	require.Equal(t, 9*time.Second, p3.BaseDelay(3))

	flat := retry.Policy{InitialInterval: time.Second, Multiplier: 1}
	require.Equal(t, time.Second, flat.BaseDelay(50), "multiplier 1 keeps the delay constant")

	var zero retry.Policy
	require.Equal(t, retry.InitialIntervalDefault, zero.BaseDelay(1))
	require.Equal(t, retry.MaxIntervalDefault, zero.BaseDelay(100))
}

func TestDelayDeterministicForSeed(t *testing.T) {
	p := retry.Policy{InitialInterval: 10 * time.Millisecond, MaxInterval: 10 * time.Second, Jitter: 0.5}
	seq := func(seed uint64) []time.Duration {
		r := seeded(seed)
		out := make([]time.Duration, 20)
		for n := range out {
			out[n] = p.Delay(n+1, r)
		}
		return out
	}
	require.Equal(t, seq(42), seq(42), "the same seed gives the same delays")
	require.NotEqual(t, seq(42), seq(43), "another seed gives other delays")

	// The same state of the source gives the same delay, whatever the attempt history.
	a, b := seeded(7), seeded(7)
	require.Equal(t, p.Delay(3, a), p.Delay(3, b))
}

func TestDelayJitterBounds(t *testing.T) {
	for _, j := range []float64{0.05, 0.2, 0.5, 0.99} {
		p := retry.Policy{InitialInterval: 3 * time.Millisecond, MaxInterval: 20 * time.Second, Multiplier: 1.7, Jitter: j}
		r := seeded(uint64(j * 1000))
		for n := 1; n <= 30; n++ {
			base := float64(p.BaseDelay(n))
			lo := time.Duration(base * (1 - j))
			hi := time.Duration(math.Ceil(base * (1 + j)))
			for range 200 {
				d := p.Delay(n, r)
				require.GreaterOrEqual(t, d, lo, "jitter %g attempt %d", j, n)
				require.LessOrEqual(t, d, hi, "jitter %g attempt %d", j, n)
			}
		}
	}
	// A nil source (the process-wide one) obeys the same bounds.
	p := retry.Policy{InitialInterval: time.Second, Jitter: 0.3}
	for range 1000 {
		d := p.Delay(1, nil)
		require.GreaterOrEqual(t, d, 700*time.Millisecond)
		require.LessOrEqual(t, d, 1300*time.Millisecond)
	}
}

// TestDelayDistribution checks that jitter is uniform over
// [base×(1−j), base×(1+j)]: a chi-square test over 10 equal buckets, the mean,
// and both halves of the range being used about equally.
func TestDelayDistribution(t *testing.T) {
	const (
		draws   = 10000
		buckets = 10
		// chi-square critical value for 9 degrees of freedom at p = 0.001.
		chi2Critical = 27.877
	)
	for _, seed := range []uint64{1, 2, 3} {
		p := retry.Policy{InitialInterval: time.Second, MaxInterval: time.Minute, Jitter: 0.25}
		const attempt = 3
		base := float64(p.BaseDelay(attempt))
		lo, width := base*0.75, base*0.5
		r := seeded(seed)
		var counts [buckets]int
		sum, below := 0.0, 0
		for range draws {
			d := float64(p.Delay(attempt, r))
			sum += d
			if d < base {
				below++
			}
			i := int((d - lo) / width * buckets)
			i = min(max(i, 0), buckets-1)
			counts[i]++
		}
		expected := float64(draws) / buckets
		chi2 := 0.0
		for _, c := range counts {
			chi2 += (float64(c) - expected) * (float64(c) - expected) / expected
		}
		require.Less(t, chi2, chi2Critical, "seed %d: buckets %v are not uniform", seed, counts)

		mean := sum / draws
		require.InEpsilon(t, base, mean, 0.01, "seed %d: mean %s, base %s", seed, time.Duration(mean), time.Duration(base))
		require.InDelta(t, draws/2, below, draws*0.03, "seed %d: %d of %d draws below the base", seed, below, draws)
		for i, c := range counts {
			require.Positive(t, c, "seed %d: bucket %d empty", seed, i)
		}
	}
}

func TestDelayCapIncludesJitterOnly(t *testing.T) {
	p := retry.Policy{InitialInterval: time.Second, MaxInterval: 10 * time.Second, Jitter: 0.1}
	r := seeded(9)
	for n := 1; n <= 100; n++ {
		d := p.Delay(n, r)
		require.LessOrEqual(t, d, 11*time.Second, "attempt %d", n)
	}
	require.Equal(t, 11*time.Second, p.LongestDelay())
	require.Equal(t, 6*time.Minute, retry.Policy{MaxAttempts: 2}.LongestDelay(), "a bound: MaxInterval plus jitter, whatever MaxAttempts")
	for range 1000 {
		d := p.Delay(50, r)
		require.GreaterOrEqual(t, d, 9*time.Second)
	}
}

func TestNoJitter(t *testing.T) {
	p := retry.Policy{InitialInterval: time.Second, Jitter: retry.NoJitter}
	r := seeded(1)
	for n := 1; n <= 10; n++ {
		require.Equal(t, p.BaseDelay(n), p.Delay(n, r))
	}
	require.Equal(t, retry.MaxIntervalDefault, p.LongestDelay(), "no jitter on the longest delay either")
}

// TestWithDefaultsIdempotent: the runtime applies defaults once and the
// policy's methods apply them again; a second pass must change nothing
// (NoJitter in particular must not become the default jitter).
func TestWithDefaultsIdempotent(t *testing.T) {
	for _, p := range []retry.Policy{
		{},
		{Jitter: retry.NoJitter},
		{MaxAttempts: 3, InitialInterval: time.Millisecond, Jitter: 0.5},
		{InitialInterval: time.Hour},
	} {
		once := p.WithDefaults()
		require.Equal(t, once, once.WithDefaults())
	}
	p := retry.Policy{InitialInterval: time.Second, Jitter: retry.NoJitter}.WithDefaults()
	r := seeded(3)
	for n := 1; n <= 5; n++ {
		require.Equal(t, p.BaseDelay(n), p.Delay(n, r), "NoJitter survives WithDefaults")
	}
	b := p.BackOff(r)
	require.Equal(t, time.Second, b.NextBackOff())
	require.Equal(t, 2*time.Second, b.NextBackOff())
}

func TestWithDefaults(t *testing.T) {
	p := retry.Policy{}.WithDefaults()
	require.Equal(t, retry.Policy{
		MaxAttempts:     retry.MaxAttemptsDefault,
		InitialInterval: retry.InitialIntervalDefault,
		MaxInterval:     retry.MaxIntervalDefault,
		Multiplier:      retry.MultiplierDefault,
		Jitter:          retry.JitterDefault,
	}, p)
	// A large InitialInterval lifts the default cap instead of failing validation.
	big := retry.Policy{InitialInterval: time.Hour}
	require.Equal(t, time.Hour, big.WithDefaults().MaxInterval)
	require.NoError(t, big.Validate())
}

func TestExhausted(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3}
	require.False(t, p.Exhausted(1))
	require.False(t, p.Exhausted(2))
	require.True(t, p.Exhausted(3))
	require.True(t, p.Exhausted(4))
	require.True(t, retry.Policy{MaxAttempts: 1}.Exhausted(1))
}

func TestBackOffYieldsPolicyDelaysThenStops(t *testing.T) {
	p := retry.Policy{MaxAttempts: 4, InitialInterval: time.Millisecond, MaxInterval: time.Second, Jitter: 0.3}
	b := p.BackOff(seeded(5))
	ref := seeded(5)
	for n := 1; n <= 3; n++ {
		require.Equal(t, p.Delay(n, ref), b.NextBackOff(), "delay %d", n)
	}
	require.Equal(t, backoff.Stop, b.NextBackOff(), "MaxAttempts-1 delays, then Stop")
	b.Reset()
	d := b.NextBackOff()
	require.NotEqual(t, backoff.Stop, d)
	require.InDelta(t, float64(time.Millisecond), float64(d), float64(time.Millisecond)*0.3+1)

	one := retry.Policy{MaxAttempts: 1}.BackOff(nil)
	require.Equal(t, backoff.Stop, one.NextBackOff(), "a single attempt never waits")
}

func TestPolicyValidate(t *testing.T) {
	require.NoError(t, retry.Policy{}.Validate(), "the zero Policy is valid")
	require.NoError(t, retry.Policy{Jitter: retry.NoJitter}.Validate())

	cases := []struct {
		name string
		p    retry.Policy
		want []string
	}{
		{"attempts", retry.Policy{MaxAttempts: -1}, []string{"retry: MaxAttempts must be >= 1, got -1"}},
		{"initial", retry.Policy{InitialInterval: -time.Second}, []string{"retry: InitialInterval must be > 0 (0 means the default), got -1s"}},
		{"max below initial", retry.Policy{InitialInterval: time.Minute, MaxInterval: time.Second}, []string{"retry: MaxInterval 1s is below InitialInterval 1m0s"}},
		{"multiplier", retry.Policy{Multiplier: 0.5}, []string{"retry: Multiplier must be >= 1, got 0.5"}},
		{"jitter high", retry.Policy{Jitter: 1}, []string{"retry: Jitter must be in [0, 1) or NoJitter, got 1"}},
		{"jitter negative", retry.Policy{Jitter: -0.5}, []string{"retry: Jitter must be in [0, 1) or NoJitter, got -0.5"}},
		{"all at once", retry.Policy{MaxAttempts: -2, Multiplier: 0.1, Jitter: 2}, []string{
			"retry: MaxAttempts must be >= 1, got -2",
			"retry: Multiplier must be >= 1, got 0.1",
			"retry: Jitter must be in [0, 1) or NoJitter, got 2",
		}},
	}
	for _, tc := range cases {
		err := tc.p.Validate()
		require.Error(t, err, tc.name)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, tc.name)
		}
		require.Len(t, strings.Split(err.Error(), "\n"), len(tc.want), "%s: one line per problem: %q", tc.name, err)
	}
}
