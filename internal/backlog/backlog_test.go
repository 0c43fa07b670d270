package backlog

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
)

// The summary has one row per topic, the source first, tiers by delay (10s
// before 1m before 10m, which text order gets wrong), unknowns kept unknown.
func TestLagSummaryOrder(t *testing.T) {
	lines := []consumer.Backlog{
		{Source: "pay.ledger.retry.10m", Partition: 0, Lag: 1, DeadLetters: -1},
		{Source: "pay.ledger.dlq", Partition: -1, Lag: -1, DeadLetters: 3},
		{Source: "pay.ledger.retry.10s", Partition: 1, Lag: 2, DeadLetters: -1},
		{Source: "pay", Partition: 1, Lag: 5, DeadLetters: -1},
		{Source: "pay.ledger.retry.1m", Partition: 0, Lag: 0, DeadLetters: -1},
		{Source: "pay", Partition: 0, Lag: 4, DeadLetters: -1},
		{Source: "pay.ledger.retry.10s", Partition: 0, Lag: 1, DeadLetters: -1},
	}
	sorted := append([]consumer.Backlog(nil), lines...)
	Sort("pay", sorted)
	got := SumPerSource(sorted)
	var names []string
	for _, l := range got {
		names = append(names, l.Source)
	}
	require.Equal(t, []string{"pay", "pay.ledger.retry.10s", "pay.ledger.retry.1m", "pay.ledger.retry.10m", "pay.ledger.dlq"}, names)
	require.Equal(t, consumer.Backlog{Source: "pay", Partition: -1, Lag: 9, DeadLetters: -1}, got[0])
	require.Equal(t, int64(3), got[1].Lag)
	require.Equal(t, consumer.Backlog{Source: "pay.ledger.dlq", Partition: -1, Lag: -1, DeadLetters: 3}, got[4])
}
