package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// startPartitions is the partition count of the start tests' topics.
const startPartitions = 3

// produceAt produces one record per partition to topic, stamped at, with
// IDs "<prefix>-<partition>".
func produceAt(t *testing.T, cl *kgo.Client, topic, prefix string, at time.Time) []string {
	t.Helper()
	var ids []string
	var recs []*kgo.Record
	for p := range int32(startPartitions) {
		id := fmt.Sprintf("%s-%d", prefix, p)
		ids = append(ids, id)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Timestamp: at, Value: []byte(id),
			Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(recs) > 0 { // a new topic's partitions may be unknown for a moment
		var failed []*kgo.Record
		for _, r := range cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				require.NoError(t, ctx.Err(), "producing: %v", r.Err)
				failed = append(failed, r.Record)
			}
		}
		recs = failed
	}
	return ids
}

// A new group starts where Config.Start says, on every partition; a group
// with committed offsets keeps them whatever its Start.
func TestStartPosition(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("start")
	createTopic(t, addrs, topic, startPartitions)
	prod := client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	now := time.Now()
	old := produceAt(t, prod, topic, "old", now.Add(-2*time.Hour))
	recent := produceAt(t, prod, topic, "recent", now.Add(-time.Minute))

	open := func(group, start string) *Source {
		s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Start: start})
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	cases := []struct{ start, group string }{
		{"", topic + "-default"},
		{"earliest", topic + "-earliest"},
		{"latest", topic + "-latest"},
		{now.Add(-time.Hour).UTC().Format(time.RFC3339), topic + "-time"},
		{now.Add(-48 * time.Hour).UTC().Format(time.RFC3339), topic + "-before-retention"},
	}
	sources := map[string]*Source{}
	for _, c := range cases {
		sources[c.start] = open(c.group, c.start)
	}
	// Produced after every group was created: each must get these.
	later := produceAt(t, prod, topic, "later", time.Now())
	all := slices.Concat(old, recent, later)
	want := map[string][]string{
		"":             all,
		"earliest":     all,
		"latest":       later,
		cases[3].start: slices.Concat(recent, later),
		cases[4].start: all,
	}
	for _, c := range cases {
		got := ReceiveAck(t, sources[c.start], len(want[c.start]))
		require.ElementsMatch(t, want[c.start], got, "start %q", c.start)
	}

	// An existing group keeps its offsets: restarted with start=latest it
	// still gets what was produced while it was down.
	s := sources["earliest"]
	require.NoError(t, s.Close(context.Background()))
	missed := produceAt(t, prod, topic, "missed", time.Now())
	restarted := open(topic+"-earliest", "latest")
	require.ElementsMatch(t, missed, ReceiveAck(t, restarted, len(missed)))
}
