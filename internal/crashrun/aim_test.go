package crashrun

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlan: round r kills 1 + (r-1) mod Instances distinct instances, every
// TimedEvery-th round is timed within [MinKill, MaxKill], and every other
// round aims at 1 to 80 % of the round's good payments.
func TestPlan(t *testing.T) {
	cfg := Config{BrokerURL: "amqp://x", Instances: 3, Batch: 201, Rand: rand.New(rand.NewPCG(1, 2))}.withDefaults()
	targets := map[int]bool{}
	for round := 1; round <= 400; round++ {
		p := cfg.plan(round)
		require.Len(t, p.victims, 1+(round-1)%3, "round %d", round)
		for i, v := range p.victims {
			require.True(t, v >= 0 && v < 3, "round %d: victim %d", round, v)
			if i > 0 {
				require.Less(t, p.victims[i-1], v, "round %d: distinct victims in order", round)
			}
		}
		if round%TimedEveryDefault == 0 {
			require.False(t, p.aimed, "round %d", round)
			require.True(t, p.after >= cfg.MinKill && p.after <= cfg.MaxKill, "round %d: %s", round, p.after)
			continue
		}
		require.True(t, p.aimed, "round %d", round)
		require.True(t, p.target >= 1 && p.target <= 160, "round %d: target %d", round, p.target)
		targets[p.target] = true
	}
	require.Greater(t, len(targets), 100, "targets are drawn over the range")

	one := Config{BrokerURL: "amqp://x", Batch: 2, TimedEvery: 1, Rand: rand.New(rand.NewPCG(1, 2))}.withDefaults()
	require.Equal(t, []int{0}, one.plan(1).victims)
	require.False(t, one.plan(1).aimed, "TimedEvery 1 times every kill")
	tiny := Config{BrokerURL: "amqp://x", Batch: 2, Rand: rand.New(rand.NewPCG(1, 2))}.withDefaults()
	require.False(t, tiny.plan(1).aimed, "one good payment leaves nothing to aim at mid-stream")
}

// TestInstanceURL: with several instances an instance_id gets each
// instance's suffix; other URLs, and a single instance's, stay as they are.
func TestInstanceURL(t *testing.T) {
	u, err := instanceURL("kafka://127.0.0.1:9092?instance_id=ledger-crashtest", 2, 3)
	require.NoError(t, err)
	require.Equal(t, "kafka://127.0.0.1:9092?instance_id=ledger-crashtest-2", u)
	u, err = instanceURL("kafka://127.0.0.1:9092?instance_id=ledger-crashtest", 0, 1)
	require.NoError(t, err)
	require.Equal(t, "kafka://127.0.0.1:9092?instance_id=ledger-crashtest", u)
	sqs := "sqs://us-east-1?endpoint=http://127.0.0.1:9324&visibility_timeout=3s&wait=1"
	u, err = instanceURL(sqs, 1, 3)
	require.NoError(t, err)
	require.Equal(t, sqs, u)
}
