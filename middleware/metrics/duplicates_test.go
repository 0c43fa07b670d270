package metrics_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware/metrics"
)

// TestDuplicatesGauge: a consumer built with AllowDuplicates shows as 1 with
// its reason; one that deduplicates as 0 with no reason; a second call
// replaces the first series.
func TestDuplicatesGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	src := memory.NewBroker().NewSource("payments", "ledger")
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	reason := "effects are naturally idempotent: upserts by payment ID"
	c, err := consumer.New(src, h, consumer.Config{Name: "ledger", Logger: slog.New(slog.DiscardHandler), Duplicates: consumer.AllowDuplicates(reason)})
	require.NoError(t, err)

	m.Duplicates("ledger", c.Duplicates())
	require.Equal(t, 1.0, obsValue(t, reg, metrics.NameDuplicatesAllowed, map[string]string{"consumer": "ledger", "reason": reason}))

	m.Duplicates("ledger", consumer.Duplicates{})
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameDuplicatesAllowed, map[string]string{"consumer": "ledger", "reason": ""}))
	ms, err := obsGather(reg, metrics.NameDuplicatesAllowed)
	require.NoError(t, err)
	require.Len(t, ms, 1, "the earlier series is replaced")
}
