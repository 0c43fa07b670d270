package kafka

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware/metrics"
	"github.com/oncely/oncely/retry"
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

// The lag metric equals end offset − committed offset per partition, read
// independently with kadm, at a checkpoint after some records were consumed
// and committed; the dead-letter gauge equals the DLQ topic's length.
func TestMetricsLagMatchesCommittedOffsets(t *testing.T) {
	addrs := brokers(t)
	topic := uniqueTopic("metrics")
	group := topic
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 2, Tiers: retry.Tiers{time.Second}})
	defer s.Close(context.Background())

	prod := client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range 10 { // 6 to partition 0, 4 to partition 1
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i / 6), Value: []byte("b"),
			Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(strconv.Itoa(i))}}})
	}
	require.NoError(t, prod.ProduceSync(ctx, recs...).FirstErr())
	publish(t, client(t, addrs), DeadLetterTopic(topic, group), &consumer.Message{ID: "d1"}, &consumer.Message{ID: "d2"})

	require.Len(t, ReceiveAck(t, s, 3), 3)
	require.NoError(t, s.commitOwned(ctx, false))

	// Expected lag, from the broker directly.
	adm := kadm.NewClient(client(t, addrs))
	ends, err := adm.ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	committed, err := adm.FetchOffsets(ctx, group)
	require.NoError(t, err)
	want := map[int32]int64{}
	var total int64
	ends.Each(func(e kadm.ListedOffset) {
		require.NoError(t, e.Err)
		lag := e.Offset
		if c, ok := committed.Lookup(topic, e.Partition); ok && c.At >= 0 {
			lag -= c.At
		}
		want[e.Partition] = lag
		total += lag
	})
	require.Len(t, want, 2)
	require.Equal(t, int64(7), total, "10 produced, 3 consumed and committed")

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	g := &gatedReporter{r: s, second: make(chan struct{})}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.PollBacklog(pctx, g, group, time.Millisecond) }()
	select {
	case <-g.second:
	case <-ctx.Done():
		t.Fatal("no second poll")
	}

	gauges := map[string]float64{}
	var dlq float64 = -1
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
				if l["source"] == topic && l["consumer"] == group {
					gauges[l["partition"]] = mt.GetGauge().GetValue()
				}
			case metrics.NameDeadLetters:
				require.Equal(t, topic, l["source"])
				dlq = mt.GetGauge().GetValue()
			}
		}
	}
	for p, lag := range want {
		require.Equal(t, float64(lag), gauges[strconv.Itoa(int(p))], "partition %d", p)
	}
	require.Equal(t, 2.0, dlq)
	stop()
	require.NoError(t, <-done)
}
