package kafka

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// Records become Messages with their key and headers; a record whose only
// header is its ID header gets no Headers map, any other keeps all of its
// headers, the ID header included.
func TestNewEntriesMessages(t *testing.T) {
	s := &Source{cfg: Config{}.withDefaults()}
	h := func(kv ...string) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	recs := []*kgo.Record{
		{Topic: "t", Key: []byte("k0"), Value: []byte("v0"), Headers: h(consumer.HeaderMessageID, "id-0"), Offset: 10},
		{Topic: "t", Key: []byte("k1"), Value: []byte("v1"), Headers: h(consumer.HeaderMessageID, "id-1", "x-a", "1", consumer.HeaderAttempt, "3"), Offset: 11},
		{Topic: "t", Value: []byte("v2"), Offset: 12},
		{Topic: "t", Key: []byte("k3"), Headers: h(HeaderCloudEventsID, "ce-3"), Offset: 13},
		{Topic: "t", Key: []byte("k4"), Headers: h(consumer.HeaderMessageID, ""), Offset: 14},
		{Topic: "t", Key: []byte("k5"), Headers: h("x-b", "2", HeaderCloudEventsID, "ce-5", consumer.HeaderMessageID, "id-5"), Offset: 15},
	}
	es := s.newEntries(recs, 0)
	require.Len(t, es, len(recs))
	type want struct {
		id, key string
		headers map[string]string
		attempt int
	}
	for i, w := range []want{
		{"id-0", "k0", nil, 1},
		{"id-1", "k1", map[string]string{consumer.HeaderMessageID: "id-1", "x-a": "1", consumer.HeaderAttempt: "3"}, 3},
		{"", "", nil, 1},
		{"ce-3", "k3", nil, 1},
		{"", "k4", map[string]string{consumer.HeaderMessageID: ""}, 1},
		{"id-5", "k5", map[string]string{"x-b": "2", HeaderCloudEventsID: "ce-5", consumer.HeaderMessageID: "id-5"}, 1},
	} {
		m := &es[i].m0
		require.Equal(t, w.id, m.ID, "record %d", i)
		require.Equal(t, w.key, m.Key, "record %d", i)
		require.Equal(t, w.headers, m.Headers, "record %d", i)
		require.Equal(t, w.attempt, m.Attempt, "record %d", i)
		require.Equal(t, recs[i].Value, m.Body, "record %d", i)
		require.Equal(t, recs[i].Offset, m.Offset, "record %d", i)
		require.Equal(t, "t", m.Source, "record %d", i)
	}
}

// The commit point is the first unsettled offset whatever the order of
// settlements across many polls, and the partition's entry buffer is reused
// rather than grown, holding no settled entry once all are settled.
func TestPartitionCommitPointAndBuffer(t *testing.T) {
	s := &Source{cfg: Config{}.withDefaults()}
	p := &partition{s: s, tp: tp{"t", 0}, owned: true, committed: -1, next: -1}
	rng := rand.New(rand.NewPCG(1, 2))
	var unsettled []*entry
	var off int64
	peak := 0
	for range 200 {
		n := 1 + rng.IntN(300)
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: "t", Offset: off, LeaderEpoch: 7}
			off++
		}
		p.add(s.newEntries(recs, 0))
		peak = max(peak, p.outstanding())
		for _, d := range p.take(nil, n, time.Now()) {
			unsettled = append(unsettled, d.(*delivery).e)
		}
		// Settle a random part, in random order.
		rng.Shuffle(len(unsettled), func(i, j int) { unsettled[i], unsettled[j] = unsettled[j], unsettled[i] })
		k := rng.IntN(len(unsettled) + 1)
		for _, e := range unsettled[:k] {
			p.settle(e)
		}
		unsettled = unsettled[k:]

		first := off
		for _, e := range unsettled {
			first = min(first, e.rec.Offset)
		}
		eo, ok := p.commitPoint()
		require.True(t, ok)
		require.Equal(t, first, eo.Offset)
		require.Equal(t, int32(7), eo.Epoch)
		require.Equal(t, int(off-first), p.outstanding())
		require.Equal(t, len(unsettled), p.inflight)
		require.LessOrEqual(t, cap(p.buf), 2*peak, "the buffer grows with the outstanding records only")
	}
	for _, e := range unsettled {
		p.settle(e)
	}
	eo, ok := p.commitPoint()
	require.True(t, ok)
	require.Equal(t, off, eo.Offset)
	require.Zero(t, p.outstanding())
	for i, e := range p.buf[:cap(p.buf)] {
		require.Nil(t, e, "slot %d still holds an entry", i)
	}
}

// TestCommitStopsAtUnsettled: on a real broker, with every record of a
// partition settled, out of order, except one in the middle, the group's
// committed offset is that record's — never past it — and a new member of
// the group gets that record first after a close. Committing the highest
// settled offset instead would skip it, losing a message.
func TestCommitStopsAtUnsettled(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("contiguous")
	group := topic
	const n, hole = 10, 3
	createTopic(t, addrs, topic, 1)
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("m-%d", i), Body: []byte("x")}
	}
	publish(t, client(t, addrs), topic, msgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	committed := func() int64 {
		t.Helper()
		offsets, err := kadmClient(t, addrs).FetchOffsets(ctx, group)
		require.NoError(t, err)
		o, ok := offsets.Lookup(topic, 0)
		require.True(t, ok, "nothing committed")
		return o.At
	}

	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, CommitInterval: time.Hour})
	var ds []consumer.Delivery
	for len(ds) < n {
		got, err := s.Receive(ctx, n-len(ds))
		require.NoError(t, err)
		ds = append(ds, got...)
	}
	for _, i := range []int{9, 7, 8, 4, 6, 5, 1, 0, 2} { // all but the hole
		require.Equal(t, int64(i), ds[i].Message().Offset)
		require.NoError(t, ds[i].Ack(ctx))
	}
	require.NoError(t, s.commitOwned(ctx, false))
	require.Equal(t, int64(hole), committed(), "the commit passed an unsettled record")
	require.NoError(t, s.Close(ctx))
	require.Equal(t, int64(hole), committed(), "the final commit passed an unsettled record")

	again := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, CommitInterval: time.Hour})
	defer again.Close(context.Background())
	got, err := again.Receive(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("m-%d", hole), got[0].Message().ID, "the unsettled record is redelivered first")
}
