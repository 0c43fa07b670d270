package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestCommitOnRevoke: a member acks records under a CommitInterval too long
// to ever tick, so only the revoke commit can commit them; a second member
// joins and takes a partition. The revoked partition's committed offset is
// the end of its contiguous acked run (an unacked record stops it, acked
// ones after it notwithstanding), the kept partition has nothing committed,
// and the second member gets the revoked partition from that offset on,
// never an acked record below it. There is
// no idempotency store, so a revoke that does not commit shows as
// redelivery. It runs in both group protocols: franz-go revokes through a
// different path under the consumer protocol (KIP-848).
//
// Catches: onRevoked not committing (the second member starts at offset 0
// and nothing is committed), committing past an unacked record (an offset
// beyond gap), or committing the partition the member kept.
func TestCommitOnRevoke(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		// Members learn of a rebalance at their next heartbeat (3s by
		// default in the classic protocol; the broker sets it in the
		// consumer protocol).
		{"classic", []kgo.Opt{kgo.HeartbeatInterval(200 * time.Millisecond)}},
		{"consumer", []kgo.Opt{kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testCommitOnRevoke(t, tc.opts)
		})
	}
}

func testCommitOnRevoke(t *testing.T, opts []kgo.Opt) {
	// Each partition's record at offset gap stays unacked, so the commit
	// point is gap whichever partition moves, and the acked records after
	// it come again by design.
	const perPart, gap = 6, 3
	addrs := brokers(t)
	topic := uniqueTopic("revoke")
	group := topic
	createTopic(t, addrs, topic, 2)
	prod := client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(p int32, id string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rec := &kgo.Record{Topic: topic, Partition: p, Value: []byte("x"), Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}}
		require.NoError(t, prod.ProduceSync(ctx, rec).FirstErr())
	}
	for p := range int32(2) {
		for i := range perPart {
			produce(p, fmt.Sprintf("p%d-%d", p, i))
		}
	}
	cfg := func() Config {
		return Config{Brokers: addrs, Topic: topic, Group: group, RetryMode: RetryInPlace,
			CommitInterval: time.Hour, RevokeTimeout: 2 * time.Second, Opts: opts}
	}

	a := newSource(t, cfg())
	defer a.Close(context.Background())
	for _, d := range receiveN(t, a, 2*perPart, 20*time.Second) {
		if d.Message().Offset != gap {
			require.NoError(t, d.Ack(context.Background()))
		}
	}
	adm := kadmClient(t, addrs)
	committed := func() map[int32]int64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, group)
		require.NoError(t, err)
		out := map[int32]int64{}
		for p, o := range offs[topic] {
			if o.At >= 0 {
				out[p] = o.At
			}
		}
		return out
	}
	require.Empty(t, committed(), "committed before any revoke")

	// a keeps polling so that the rebalance can proceed (blocked
	// rebalances); b reports what it receives.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for ctx.Err() == nil {
			_, _ = a.Receive(ctx, 10)
		}
	}()
	defer func() { cancel(); <-polled }()
	b := newSource(t, cfg())
	defer b.Close(context.Background())
	got := make(chan *consumer.Message, 4*perPart)
	received := make(chan struct{})
	go func() {
		defer close(received)
		for ctx.Err() == nil {
			ds, err := b.Receive(ctx, 10)
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("b: Receive: %v", err)
				return
			}
			for _, d := range ds {
				got <- d.Message()
				_ = d.Ack(ctx)
			}
		}
	}()
	defer func() { cancel(); <-received }()

	var moved int32 = -1
	adaptertest.WaitUntil(t, 20*time.Second, "b to own a partition", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for k := range b.parts {
			moved = k.partition
		}
		return len(b.parts) == 1
	})
	// b owns the partition only after a revoked it, and a commits before
	// completing the revoke.
	require.Equal(t, map[int32]int64{moved: gap}, committed(), "committed offsets after revoking partition %d", moved)

	// b gets the moved partition from the commit point on, then a sentinel.
	produce(moved, "sentinel")
	var ids []string
	for {
		var m *consumer.Message
		select {
		case m = <-got:
		case <-ctx.Done():
			t.Fatalf("b did not receive the sentinel; it got %v", ids)
		}
		if m.ID == "sentinel" {
			break
		}
		ids = append(ids, m.ID)
	}
	var wantIDs []string
	for i := gap; i < perPart; i++ {
		wantIDs = append(wantIDs, fmt.Sprintf("p%d-%d", moved, i))
	}
	require.Equal(t, wantIDs, ids, "b's deliveries of partition %d before the sentinel", moved)
}
