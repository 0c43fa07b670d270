package redis

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware/metrics"
)

// gatedReporter lets the first Backlog call through and holds the second
// until ctx is done, signalling on second when it starts: once it has, the
// first poll's values are in the registry and nothing changes them.
type gatedReporter struct {
	r      consumer.BacklogReporter
	calls  int
	second chan struct{}
}

func (g *gatedReporter) Backlog(ctx context.Context) ([]consumer.Backlog, error) {
	g.calls++
	if g.calls == 1 {
		return g.r.Backlog(ctx)
	}
	if g.calls == 2 {
		close(g.second)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestMetricsBacklog: the lag gauge counts what the consumer still has to
// do (undelivered, pending, and retry copies waiting) and the dead-letter
// gauge the dead-letter stream's length. Of 10 entries, 5 were received:
// 2 acked, 1 dead-lettered, 1 retried an hour later, 1 held; so 5
// undelivered + 1 pending + 1 delayed = 7, and 1 dead letter.
func TestMetricsBacklog(t *testing.T) {
	client := newClient(t)
	stream := adaptertest.SourceName("metrics")
	publish(t, client, stream, testMessages("m", 10)...)
	src := newSource(t, client, Config{Stream: stream, Consumer: "ledger"})
	ds := adaptertest.ReceiveN(t, src, 5, 10*time.Second)
	ctx := t.Context()
	ackAll(t, ds[:2])
	require.NoError(t, ds[2].DeadLetter(ctx, consumer.FailureHeaders(ds[2].Message(), consumer.Failure{Consumer: "ledger", Reason: consumer.ReasonPermanent, NextAttempt: 1})))
	require.NoError(t, ds[3].Retry(ctx, time.Hour, consumer.FailureHeaders(ds[3].Message(), consumer.Failure{Consumer: "ledger", NextAttempt: 2})))
	waitPending(t, client, stream, "ledger", 1) // the acks are written in the background

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	g := &gatedReporter{r: src, second: make(chan struct{})}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.PollBacklog(pctx, g, "ledger", time.Millisecond) }()
	select {
	case <-g.second:
	case <-time.After(10 * time.Second):
		t.Fatal("no second poll")
	}
	lag, dlq := -1.0, -1.0
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetName() {
			case metrics.NameBacklog:
				require.Equal(t, stream, l["source"])
				lag = mt.GetGauge().GetValue()
			case metrics.NameDeadLetters:
				require.Equal(t, stream, l["source"])
				dlq = mt.GetGauge().GetValue()
			}
		}
	}
	require.Equal(t, 7.0, lag)
	require.Equal(t, 1.0, dlq)
	stop()
	require.NoError(t, <-done)
	ackAll(t, ds[4:])
}
