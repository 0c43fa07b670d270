package rabbitmq

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
)

// TestCloseKeepsOrder: a Source with prefetch 4 receives four messages,
// acks the first two and closes as soon as the ack is sent, while the
// broker pushes the two messages the ack made room for. The queue must
// then hold the six unsettled messages in their order: the two the
// Source held ahead of the two on their way to it. A Close that cancels
// the consumer first lets a quorum queue requeue those on their way ahead
// of the held ones. Several rounds, as the push races the Close.
func TestCloseKeepsOrder(t *testing.T) {
	for _, qt := range []QueueType{Quorum, Classic} {
		t.Run(string(qt), func(t *testing.T) {
			for round := range 16 {
				closeKeepsOrder(t, qt, round)
			}
		})
	}
}

func closeKeepsOrder(t *testing.T, qt QueueType, round int) {
	queue := uniqueName("closeorder")
	all := msgs("m", 8)
	cleanupTopology(t, queue, "ledger", testTiers)
	pubQT(t, qt, queue, all...)

	src := newSource(t, Config{Queue: queue, Consumer: "ledger", QueueType: qt, Prefetch: 4})
	ds := adaptertest.ReceiveN(t, src, 4, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, d := range ds[:2] {
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	src.mu.Lock()
	sess := src.cur
	src.mu.Unlock()
	adaptertest.WaitUntil(t, 10*time.Second, "the ack sent", func() bool { return sess.acks.frames.Load() > 0 })
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var want []string
	for _, m := range all[2:] {
		want = append(want, m.ID)
	}
	adaptertest.WaitUntil(t, 10*time.Second, fmt.Sprintf("%d messages requeued", len(want)), func() bool { return depth(t, queue) == len(want) })
	var got []string
	for _, m := range drain(t, queue, KeyHeaderDefault) {
		got = append(got, m.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("round %d: the queue holds %v, want %v (in their order)", round, got, want)
	}
}
