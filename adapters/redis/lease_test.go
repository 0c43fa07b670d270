package redis

import (
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestLeaseLostAlone: a Source holds four unsettled entries received
// together (one lease generation) and another consumer takes one of them.
// Only that loss ends their lease; the holder renews the other three no
// more and hands them back, so a second Source, polling every 100ms,
// receives all three within 5s (five leases) while the holder stays open,
// each at Attempt 1: a lost lease costs its companions neither a wait
// until Close nor an attempt.
func TestLeaseLostAlone(t *testing.T) {
	client := newClient(t)
	stream := adaptertest.SourceName("lostalone")
	msgs := testMessages("alone", 4)
	publish(t, client, stream, msgs...)
	cfg := Config{Stream: stream, Consumer: "ledger", Lease: time.Second, ReclaimInterval: 100 * time.Millisecond}
	holder := newSource(t, client, cfg)
	held := adaptertest.ReceiveN(t, holder, len(msgs), 10*time.Second)
	stolen := held[0].Message().Coordinates[CoordinateEntryID]
	if err := client.XClaim(t.Context(), &goredis.XClaimArgs{Stream: stream, Group: "ledger", Consumer: "thief", Messages: []string{stolen}}).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held[0].(consumer.Leased).Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease of the stolen entry was not lost within 5s")
	}
	// The thief handles its entry.
	if err := client.XAck(t.Context(), stream, "ledger", stolen).Err(); err != nil {
		t.Fatal(err)
	}

	other := newSource(t, client, cfg)
	got := adaptertest.ReceiveN(t, other, len(msgs)-1, 5*time.Second)
	var ids []string
	for _, d := range got {
		m := d.Message()
		ids = append(ids, m.ID)
		if m.Attempt != 1 {
			t.Errorf("%s came back at attempt %d, want 1: handing it back must not count an attempt", m.ID, m.Attempt)
		}
	}
	slices.Sort(ids)
	if want := []string{msgs[1].ID, msgs[2].ID, msgs[3].ID}; !slices.Equal(ids, want) {
		t.Errorf("the second Source got %v, want %v", ids, want)
	}
	ackAll(t, got)
	waitPending(t, client, stream, "ledger", 0)
}
