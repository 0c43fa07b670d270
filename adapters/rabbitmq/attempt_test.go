package rabbitmq

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestCleanClosesKeepAttempt receives three messages and closes the Source
// without settling them, five times: the broker's x-delivery-count rises on
// every clean close, but Message.Attempt stays 1 (no handler failed), and
// the count is still reported in Coordinates.
func TestCleanClosesKeepAttempt(t *testing.T) {
	const closes = 5
	queue := uniqueName("closes")
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", 3)...)
	for i := range closes + 1 {
		src := newSource(t, Config{Queue: queue, Consumer: "ledger"})
		for _, d := range adaptertest.ReceiveN(t, src, 3, 20*time.Second) {
			m := d.Message()
			if m.Attempt != 1 {
				t.Errorf("after %d clean closes %s has Attempt %d, want 1", i, m.ID, m.Attempt)
			}
			if i > 0 && m.Coordinates[headerXDeliveryCount] != strconv.Itoa(i) {
				t.Errorf("after %d clean closes %s has x-delivery-count %q", i, m.ID, m.Coordinates[headerXDeliveryCount])
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := src.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
}

// TestCloseWithReceiveOutstanding closes a Source that holds five unsettled
// deliveries while a Receive is outstanding and five more messages are
// published: the Receive ends with ErrSourceClosed, and a new Source gets
// all ten within 5s, with Attempt 1 (nothing is stranded in the closed
// Source, and the close counts no attempt).
func TestCloseWithReceiveOutstanding(t *testing.T) {
	queue := uniqueName("outstanding")
	cleanupTopology(t, queue, "ledger", testTiers)
	all := msgs("m", 10)
	publish(t, queue, all[:5]...)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger"})
	adaptertest.ReceiveN(t, src, 5, 20*time.Second)

	outstanding := receiveAsync(src)
	publish(t, queue, all[5:]...) // the outstanding Receive or the prefetch may take these
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-outstanding:
		if r.err != nil && !errors.Is(r.err, consumer.ErrSourceClosed) {
			t.Errorf("outstanding Receive: %v, want ErrSourceClosed", r.err)
		}
		if r.err == nil { // it took some of the late five before Close; they are released too
			t.Logf("the outstanding Receive took %d deliveries before Close", r.n)
			select {
			case r = <-receiveAsync(src):
				if !errors.Is(r.err, consumer.ErrSourceClosed) {
					t.Errorf("Receive after Close: %d deliveries, %v; want ErrSourceClosed", r.n, r.err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Receive after Close blocked")
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the outstanding Receive did not end within 5s of Close")
	}

	next := newSource(t, Config{Queue: queue, Consumer: "ledger"})
	got := adaptertest.ReceiveN(t, next, 10, 5*time.Second)
	seen := make(map[string]bool)
	for _, d := range got {
		m := d.Message()
		seen[m.ID] = true
		if m.Attempt != 1 {
			t.Errorf("%s: Attempt %d after a close, want 1", m.ID, m.Attempt)
		}
	}
	for _, m := range all {
		if !seen[m.ID] {
			t.Errorf("%s not redelivered to the new Source", m.ID)
		}
	}
}

// received is what one Receive returned.
type received struct {
	n   int
	err error
}

// receiveAsync calls src.Receive in a goroutine and reports its result.
func receiveAsync(src *Source) <-chan received {
	out := make(chan received, 1)
	go func() {
		ds, err := src.Receive(context.Background(), 10)
		out <- received{len(ds), err}
	}()
	return out
}
