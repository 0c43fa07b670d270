package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
)

// Closing with a Receive outstanding and deliveries unsettled strands
// nothing: the outstanding Receive returns ErrSourceClosed without
// deliveries (also for records published while it waited), and a new Source
// of the group gets every unsettled record at once, Attempt unchanged, and
// none of the settled ones.
func TestCloseWithReceiveOutstanding(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprint("late=", late), func(t *testing.T) { testCloseWithReceiveOutstanding(t, addrs, late) })
	}
}

// testCloseWithReceiveOutstanding: late publishes one more record while the
// Receive is outstanding.
func testCloseWithReceiveOutstanding(t *testing.T, addrs []string, late bool) {
	topic := uniqueTopic("close")
	cfg := Config{Brokers: addrs, Topic: topic, Group: topic, TopicPartitions: 3}
	a := newSource(t, cfg)
	const n = 12
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("c%02d", i), Key: fmt.Sprint(i), Body: []byte("b")}
	}
	publish(t, client(t, addrs), topic, msgs...)
	ds := receiveN(t, a, n, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Settle the first record of each partition; the rest stay unsettled.
	acked := map[string]bool{}
	first := map[int32]bool{}
	for _, d := range ds {
		m := d.Message()
		if !first[m.Partition] {
			first[m.Partition] = true
			acked[m.ID] = true
			require.NoError(t, d.Ack(ctx))
		}
	}

	type result struct {
		ds  []consumer.Delivery
		err error
	}
	out := make(chan result, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		ds, err := a.Receive(ctx, 10)
		out <- result{ds, err}
	}()
	<-started
	if late {
		publish(t, client(t, addrs), topic, &consumer.Message{ID: "late", Key: "late", Body: []byte("b")})
	}
	closedAt := time.Now()
	require.NoError(t, a.Close(ctx))
	var r result
	select {
	case r = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("the outstanding Receive did not return after Close")
	}
	t.Logf("outstanding Receive: %d deliveries, %v", len(r.ds), r.err)
	if r.err == nil {
		// The Receive took the late record before Close began: it is
		// unsettled too, and must come back.
		require.Len(t, r.ds, 1)
		require.Equal(t, "late", r.ds[0].Message().ID)
	} else {
		require.ErrorIs(t, r.err, consumer.ErrSourceClosed)
		require.Empty(t, r.ds)
	}

	b := newSource(t, cfg)
	defer b.Close(context.Background())
	want := n - len(acked)
	if late {
		want++
	}
	again := byID(t, receiveN(t, b, want, 10*time.Second))
	took := time.Since(closedAt)
	t.Logf("a new Source got the %d unsettled records %s after Close began", want, took)
	if late {
		require.Contains(t, again, "late")
	}
	for id, d := range again {
		require.False(t, acked[id], "settled %s came back", id)
		require.Equal(t, 1, d.Message().Attempt, id)
	}
	require.Empty(t, receiveFor(t, b, 300*time.Millisecond), "more than the unsettled records came back")
}
