package nats

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestPrefetchBounded: a Source that Receive does not call holds at most
// its source stream's share of Config.Prefetch (pull buffer plus inbox
// slots) delivered and unacknowledged, over several pull requests; once
// Receive takes them, the next ones come, in batches, every message once.
// It catches a pull subscription whose callback queues without a slot (the
// server then hands out every message at once: 400 pending) and an inbox
// that hands Receive one message at a time.
func TestPrefetchBounded(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("prefetch")
	cfg := Config{Source: source, Consumer: "prefetch", Prefetch: 64}
	c.cleanup(t, source, cfg.Consumer)
	const total = 400
	msgs := make([]*consumer.Message, total)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("p-%03d", i), Body: []byte("b")}
	}
	c.publish(t, source, msgs...)
	src := c.newSource(t, cfg)
	defer closeSrc(t, src)
	if got := src.Capabilities().Prefetch; got != cfg.Prefetch {
		t.Fatalf("Capabilities().Prefetch %d, want Config.Prefetch %d", got, cfg.Prefetch)
	}

	share := sourceShare(cfg.Prefetch) // 56: a pull buffer of 49 and 7 slots in the inbox
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pending := func() int {
		info, err := c.js.Stream(ctx, StreamName(source))
		if err != nil {
			t.Fatal(err)
		}
		cons, err := info.Consumer(ctx, cfg.Consumer)
		if err != nil {
			t.Fatal(err)
		}
		return cons.CachedInfo().NumAckPending
	}
	// The first pull fills the pull buffer; the callback then waits for an
	// inbox slot, so nothing more is asked while Receive is not called.
	depth := newPuller(source, share, cfg.MaxAckPending, cfg.Prefetch).depth
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the pull buffer filled", func() bool { return pending() >= depth })
	// Three pull expiries: the subscription asks again and again, and the
	// server must still see no more than the share taken.
	for end := time.Now().Add(3 * cfg.withDefaults().PollWait); time.Now().Before(end); {
		if n := pending(); n > share {
			t.Fatalf("%d messages delivered ahead of Receive, want at most %d (Prefetch %d)", n, share, cfg.Prefetch)
		}
		time.Sleep(50 * time.Millisecond) // polls the server; the bound is what is checked
	}

	seen := map[string]bool{}
	batched := false
	for len(seen) < total {
		ds, err := src.Receive(ctx, 100)
		if err != nil {
			t.Fatalf("Receive after %d: %v", len(seen), err)
		}
		batched = batched || len(ds) > 1
		for _, d := range ds {
			id := d.Message().ID
			if seen[id] {
				t.Fatalf("%s received twice", id)
			}
			seen[id] = true
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !batched {
		t.Error("every Receive returned one message: the inbox hands out no batches")
	}
	adaptertest.AssertQuiet(t, src, adaptertest.QuietWindow)
}

// TestMessagePosition: a message's Offset is its stream sequence, its
// Coordinates are nil on the first delivery and carry the server's
// delivery count on a redelivery, and a dead-lettered copy carries the
// sequence as oncely-original-offset. It catches a Source that leaves
// Offset at -1 (failure context loses the message's position) and one
// that drops the evidence of a redelivery.
func TestMessagePosition(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("position")
	cfg := Config{Source: source, Consumer: "position", Prefetch: 8}
	c.cleanup(t, source, cfg.Consumer)
	c.publish(t, source, &consumer.Message{ID: "pos-1", Body: []byte("a")}, &consumer.Message{ID: "pos-2", Body: []byte("b")})

	first := c.newSource(t, cfg)
	ds := adaptertest.ReceiveN(t, first, 2, adaptertest.WaitTimeout)
	for i, d := range ds {
		m := d.Message()
		if m.Offset != int64(i+1) || m.Coordinates != nil {
			t.Fatalf("first delivery of %s: Offset %d Coordinates %v, want %d and none", m.ID, m.Offset, m.Coordinates, i+1)
		}
	}
	closeSrc(t, first) // both given back unsettled

	second := c.newSource(t, cfg)
	defer closeSrc(t, second)
	ds = adaptertest.ReceiveN(t, second, 2, adaptertest.WaitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, d := range ds {
		m := d.Message()
		if m.Coordinates[CoordinateNumDelivered] != "2" || m.Offset < 1 {
			t.Fatalf("redelivery of %s: Offset %d Coordinates %v, want num-delivered 2", m.ID, m.Offset, m.Coordinates)
		}
		if m.ID == "pos-2" {
			h := consumer.FailureHeaders(m, consumer.Failure{Reason: consumer.ReasonPermanent, Err: fmt.Errorf("bad"), Consumer: cfg.Consumer})
			if err := d.DeadLetter(ctx, h); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var dl []*consumer.Message
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the dead letter", func() bool {
		dl = c.deadLetters(t, source, cfg.Consumer)
		return len(dl) > 0
	})
	if got := dl[0].Header(consumer.HeaderOriginalOffset); got != "2" {
		t.Errorf("dead letter's %s %q, want 2 (its stream sequence)", consumer.HeaderOriginalOffset, got)
	}
}

// TestDefaultsRunTogether: a Source at its default Prefetch (256, above
// the runtime's 8 × Concurrency) runs under a Consumer whose MaxInFlight
// is left unset, which then defaults to the Prefetch, and handles every
// message once. It catches a runtime default that ignores the Source's
// prefetch (consumer.New then refuses the defaults).
func TestDefaultsRunTogether(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("defaults")
	cfg := Config{Source: source, Consumer: "defaults"}
	ids := c.publishIDs(t, source, "d", 20)
	src := c.newSource(t, cfg)
	if got := src.Capabilities().Prefetch; got != PrefetchDefault {
		t.Fatalf("Capabilities().Prefetch %d, want PrefetchDefault %d", got, PrefetchDefault)
	}
	seen := make(chan string, len(ids))
	cons, err := consumer.New(src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		seen <- m.ID
		return nil
	}), consumer.Config{Name: cfg.Consumer, Duplicates: consumer.AllowDuplicates("test: counts deliveries")})
	if err != nil {
		closeSrc(t, src)
		t.Fatalf("consumer.New with the defaults: %v", err)
	}
	ran := make(chan error, 1)
	go func() { ran <- cons.Run(context.Background()) }()
	got := map[string]int{}
	timeout := time.After(adaptertest.WaitTimeout)
	for len(got) < len(ids) {
		select {
		case id := <-seen:
			got[id]++
		case <-timeout:
			t.Fatalf("handled %d of %d messages", len(got), len(ids))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), adaptertest.WaitTimeout)
	defer cancel()
	if err := cons.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("message %s handled %d times, want once", id, got[id])
		}
	}
}
