package retry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/retry"
)

func TestReach(t *testing.T) {
	cases := []struct {
		name string
		p    retry.Policy
		want time.Duration
	}{
		{"three attempts, 1s to 2s", retry.Policy{MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: 2 * time.Second}, 2400 * time.Millisecond},
		{"defaults: four retries", retry.Policy{}, 9600 * time.Millisecond},
		{"capped by MaxInterval", retry.Policy{MaxAttempts: 100, MaxInterval: time.Minute, Jitter: retry.NoJitter}, time.Minute},
		{"one attempt never retries", retry.Policy{MaxAttempts: 1}, 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.p.Reach(), c.name)
		require.LessOrEqual(t, c.p.Reach(), c.p.LongestDelay(), c.name)
	}
}

func TestTiersUpto(t *testing.T) {
	tiers := retry.DefaultTiers
	cases := map[time.Duration]retry.Tiers{
		0:                       {time.Second},
		time.Second:             {time.Second},
		2400 * time.Millisecond: {time.Second, 10 * time.Second},
		time.Minute:             {time.Second, 10 * time.Second, time.Minute},
		2 * time.Hour:           tiers,
	}
	for d, want := range cases {
		got := tiers.Upto(d)
		require.Equal(t, want, got, "Upto(%s)", d)
		require.Equal(t, tiers.Tier(d), got.Tier(d), "Tier(%s) on Upto", d)
	}
}
