package redis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

func testMessages(prefix string, n int) []*consumer.Message {
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("%s-%02d", prefix, i), Key: fmt.Sprintf("k%d", i), Body: []byte(fmt.Sprint(i))}
	}
	return msgs
}

func ackAll(t *testing.T, ds []consumer.Delivery) {
	t.Helper()
	for _, d := range ds {
		if err := d.Ack(t.Context()); err != nil {
			t.Fatalf("ack %s: %v", d.Message().ID, err)
		}
	}
}

func pendingCount(t *testing.T, client goredis.UniversalClient, stream, group string) int64 {
	t.Helper()
	p, err := client.XPending(t.Context(), stream, group).Result()
	if err != nil {
		t.Fatalf("XPENDING %s: %v", stream, err)
	}
	return p.Count
}

// waitPending waits until n entries of stream are pending in group: acks
// are written in the background.
func waitPending(t *testing.T, client goredis.UniversalClient, stream, group string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := pendingCount(t, client, stream, group)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries of %s pending in %s after 10s, want %d", got, stream, group, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func consumerNames(t *testing.T, client goredis.UniversalClient, stream, group string) []string {
	t.Helper()
	list, err := client.XInfoConsumers(t.Context(), stream, group).Result()
	if err != nil {
		t.Fatalf("XINFO CONSUMERS %s: %v", stream, err)
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	return names
}

// TestCrashReclaim: entries a consumer took and never settled, its lease
// renewals stopped (a hung process), are reclaimed by another Source once
// the lease ended, each counted as an attempt; an entry deleted from the
// stream meanwhile is a ghost, acked and counted, never delivered. The hung
// Source's late Close leaves the reclaimed entries alone, and its consumer,
// holding nothing, is deleted.
func TestCrashReclaim(t *testing.T) {
	client := newClient(t)
	stream := adaptertest.SourceName("crash")
	publish(t, client, stream, testMessages("crash", 3)...)
	cfg := Config{Stream: stream, Consumer: "ledger", Lease: time.Second, ReclaimInterval: 100 * time.Millisecond}
	crashed := newSource(t, client, cfg)
	taken := adaptertest.ReceiveN(t, crashed, 3, 10*time.Second)
	crashed.leases.stop()
	ghost := taken[1].Message().Coordinates[CoordinateEntryID]
	if err := client.XDel(t.Context(), stream, ghost).Err(); err != nil {
		t.Fatal(err)
	}

	heir := newSource(t, client, cfg)
	got := adaptertest.ReceiveN(t, heir, 2, 10*time.Second)
	var ids []string
	for _, d := range got {
		m := d.Message()
		ids = append(ids, m.ID)
		if m.Attempt != 2 {
			t.Errorf("%s reclaimed with Attempt %d, want 2 (the crash counts)", m.ID, m.Attempt)
		}
	}
	if want := []string{"crash-00", "crash-02"}; !slices.Equal(ids, want) {
		t.Errorf("reclaimed %v, want %v", ids, want)
	}
	ackAll(t, got)
	if st := heir.Stats(); st.Reclaimed != 2 || st.Ghosts != 1 {
		t.Errorf("Stats %+v, want 2 reclaimed and 1 ghost", st)
	}
	waitPending(t, client, stream, "ledger", 0)
	adaptertest.AssertQuiet(t, heir, 1500*time.Millisecond)

	if err := crashed.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := pendingCount(t, client, stream, "ledger"); n != 0 {
		t.Errorf("%d entries pending after the crashed Source closed, want 0", n)
	}
	if names := consumerNames(t, client, stream, "ledger"); slices.Contains(names, crashed.name) || !slices.Contains(names, heir.name) {
		t.Errorf("consumers %v: want %s (alive) and not %s (closed, nothing pending)", names, heir.name, crashed.name)
	}
}

// TestReapDeadConsumers: a consumer idle past ReapIdle is deleted only when
// it holds nothing pending.
func TestReapDeadConsumers(t *testing.T) {
	client := newClient(t)
	stream := adaptertest.SourceName("reap")
	ctx := t.Context()
	if err := client.XGroupCreateMkStream(ctx, stream, "ledger", "0").Err(); err != nil {
		t.Fatal(err)
	}
	publish(t, client, stream, testMessages("reap", 1)...)
	// dead-holding takes the entry and dies; dead-empty dies holding nothing.
	if err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: "ledger", Consumer: "dead-holding", Streams: []string{stream, ">"}, Count: 1}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.XGroupCreateConsumer(ctx, stream, "ledger", "dead-empty").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // idle past ReapIdle (1s)

	src := newSource(t, client, Config{Stream: stream, Consumer: "ledger", Lease: time.Second, ReapIdle: time.Second})
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)
	names := consumerNames(t, client, stream, "ledger")
	if slices.Contains(names, "dead-empty") || !slices.Contains(names, "dead-holding") {
		t.Errorf("consumers %v after the reap: want dead-holding (it held an entry) and not dead-empty", names)
	}
	ackAll(t, d)
}

// TestTrimKeepsUnprocessed: trimming removes only entries every group is
// done with; a slower group still gets all of its entries.
func TestTrimKeepsUnprocessed(t *testing.T) {
	client := newClient(t)
	stream := adaptertest.SourceName("trim")
	msgs := testMessages("trim", 10)
	publish(t, client, stream, msgs...)
	slow := newSource(t, client, Config{Stream: stream, Consumer: "slow"})
	held := adaptertest.ReceiveN(t, slow, 6, 10*time.Second)
	ackAll(t, held[:4])

	fast := newSource(t, client, Config{Stream: stream, Consumer: "fast", TrimInterval: time.Millisecond})
	ackAll(t, adaptertest.ReceiveN(t, fast, 10, 10*time.Second))
	waitPending(t, client, stream, "slow", 2)
	waitPending(t, client, stream, "fast", 0)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if ds, err := fast.Receive(ctx, 1); len(ds) != 0 || err == nil {
		t.Fatalf("Receive: %d deliveries, %v; want none and the deadline", len(ds), err)
	}
	left := readStream(t, client, stream)
	var ids []string
	for _, m := range left {
		ids = append(ids, m.ID)
	}
	want := []string{"trim-04", "trim-05", "trim-06", "trim-07", "trim-08", "trim-09"}
	if !slices.Equal(ids, want) {
		t.Errorf("stream after the trim holds %v, want %v (from the slow group's oldest pending entry)", ids, want)
	}
	ackAll(t, held[4:])
	rest := adaptertest.ReceiveN(t, slow, 4, 10*time.Second)
	for i, d := range rest {
		if id := d.Message().ID; id != msgs[6+i].ID {
			t.Errorf("slow group got %s, want %s", id, msgs[6+i].ID)
		}
	}
	ackAll(t, rest)
}

// TestLeaseRenewed: a delivery held past its lease is renewed, so no other
// Source reclaims it, and its lease is never lost.
func TestLeaseRenewed(t *testing.T) {
	client := newClient(t)
	stream := adaptertest.SourceName("renew")
	publish(t, client, stream, testMessages("renew", 1)...)
	cfg := Config{Stream: stream, Consumer: "ledger", Lease: time.Second, ReclaimInterval: 100 * time.Millisecond}
	holder := newSource(t, client, cfg)
	d := adaptertest.ReceiveN(t, holder, 1, 10*time.Second)[0]
	other := newSource(t, client, cfg)
	adaptertest.AssertQuiet(t, other, 2500*time.Millisecond) // 2.5 leases
	select {
	case <-d.(consumer.Leased).Lost():
		t.Fatal("the lease was lost although it was renewed")
	default:
	}
	if st := other.Stats(); st.Reclaimed != 0 {
		t.Errorf("the other Source reclaimed %d entries, want 0", st.Reclaimed)
	}
	ackAll(t, []consumer.Delivery{d})
}

// TestLeaseLost: when an unsettled entry was reclaimed by another consumer
// (as after renewals failed), the next renewal ends its lease.
func TestLeaseLost(t *testing.T) {
	client := newClient(t)
	stream := adaptertest.SourceName("lost")
	publish(t, client, stream, testMessages("lost", 1)...)
	src := newSource(t, client, Config{Stream: stream, Consumer: "ledger", Lease: time.Second})
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	id := d.Message().Coordinates[CoordinateEntryID]
	if err := client.XClaim(t.Context(), &goredis.XClaimArgs{Stream: stream, Group: "ledger", Consumer: "thief", Messages: []string{id}}).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.(consumer.Leased).Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease was not lost 5s after another consumer took the entry")
	}
	if err := d.(consumer.LeaseContexter).LeaseContext().Err(); err == nil {
		t.Error("LeaseContext is not done although Lost is closed")
	}
}
