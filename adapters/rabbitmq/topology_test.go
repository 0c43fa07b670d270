package rabbitmq

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// TestTopologyMismatch pre-declares the source queue as a classic queue;
// New (quorum by default) reports the difference instead of a bare 406.
func TestTopologyMismatch(t *testing.T) {
	queue := uniqueName("mismatch")
	cleanupTopology(t, queue, "ledger", testTiers)
	ch, closeConn := openChannel(t)
	defer closeConn()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := New(ctx, Config{URL: testURL(t), Queue: queue, Consumer: "ledger", Tiers: testTiers, Logger: testLogger()})
	var te *TopologyError
	if !errors.As(err, &te) || !errors.Is(err, ErrTopologyMismatch) {
		t.Fatalf("New: %v, want a TopologyError", err)
	}
	t.Logf("error: %v", err)
	for _, want := range []string{queue, "inequivalent arg", `x-queue-type="quorum"`, "delete the queue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	// The same queue works with a matching Config.
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", QueueType: Classic})
	if !src.Connected() {
		t.Error("not connected")
	}
}

// TestLegacyDeliveryLimit: a source queue an earlier version declared with
// its default delivery limit (20) is used as it is while DeliveryLimit is
// left at its default, so an upgrade does not stop consumers; an explicit
// DeliveryLimit other than the queue's is still a TopologyError.
func TestLegacyDeliveryLimit(t *testing.T) {
	queue := uniqueName("legacy")
	cleanupTopology(t, queue, "ledger", testTiers)
	ch, closeConn := openChannel(t)
	defer closeConn()
	old := topology{queue: queue, qtype: Quorum, limit: legacyDeliveryLimit}.source()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, old.args); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, limit := range []int{DeliveryLimitDefault, 50} {
		_, err := New(ctx, Config{URL: testURL(t), Queue: queue, Consumer: "ledger", DeliveryLimit: limit, Tiers: testTiers, Logger: testLogger()})
		if !errors.Is(err, ErrTopologyMismatch) {
			t.Errorf("explicit DeliveryLimit %d on a queue with 20: %v, want a TopologyError", limit, err)
		}
	}
	src := newSource(t, Config{Queue: queue, Consumer: "ledger"})
	publish(t, queue, &consumer.Message{ID: "m", Body: []byte("x")})
	if m := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0].Message(); m.ID != "m" {
		t.Errorf("received %q", m.ID)
	}
}

// TestBacklog reports ready plus held messages and the dead-letter depth.
func TestBacklog(t *testing.T) {
	queue := uniqueName("backlog")
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", 10)...)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := adaptertest.ReceiveN(t, src, 3, 20*time.Second)
	if err := got[0].DeadLetter(ctx, map[string]string{consumer.HeaderDeadLetterReason: "permanent"}); err != nil {
		t.Fatal(err)
	}
	var bl []consumer.Backlog
	adaptertest.WaitUntil(t, 10*time.Second, "the backlog to settle", func() bool {
		var err error
		bl, err = src.Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return bl[0].Lag == 9 && bl[0].DeadLetters == 1
	})
	if bl[0].Source != queue || bl[0].Partition != -1 {
		t.Errorf("first line %+v", bl[0])
	}
	if len(bl) != 1+len(testTiers) {
		t.Errorf("%d lines, want %d", len(bl), 1+len(testTiers))
	}
	for _, b := range bl[1:] {
		if b.Lag != 0 || b.DeadLetters != -1 || !strings.Contains(b.Source, ".retry.") {
			t.Errorf("retry line %+v", b)
		}
	}
}

// TestPrefetchBoundsBuffer checks the broker pushes no more than Prefetch
// deliveries while nobody calls Receive.
func TestPrefetchBoundsBuffer(t *testing.T) {
	queue := uniqueName("prefetch")
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", 50)...)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 5})
	adaptertest.WaitUntil(t, 10*time.Second, "the buffer to fill", func() bool { return inboxLen(src) == 5 })
	time.Sleep(300 * time.Millisecond)
	if n := inboxLen(src); n != 5 {
		t.Errorf("buffer holds %d deliveries with prefetch 5", n)
	}
	if d := depth(t, queue); d != 45 {
		t.Errorf("queue holds %d ready, want 45", d)
	}
}

func inboxLen(src *Source) int { return src.inbox.Len() }

// TestDeliveryLimitDeadLetters lets the broker's own delivery limit strike
// (the connection is lost twice with the message unacked, as when a
// consumer crashes on it): the message lands in the dead-letter queue
// through the dead-letter exchange, never dropped.
func TestDeliveryLimitDeadLetters(t *testing.T) {
	addr, proxy := proxied(t)
	queue := uniqueName("limit")
	cleanupTopology(t, queue, "ledger", testTiers)
	var logs envtest.Buffer
	src := newSource(t, Config{URL: addr, Queue: queue, Consumer: "ledger", DeliveryLimit: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	publish(t, queue, &consumer.Message{ID: "crasher", Body: []byte("x")})
	for i := range 2 {
		d := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0]
		if m := d.Message(); m.Attempt != 1 || i > 0 && m.Coordinates["x-delivery-count"] != strconv.Itoa(i) {
			t.Errorf("delivery %d: Attempt %d, x-delivery-count %q", i+1, m.Attempt, m.Coordinates["x-delivery-count"])
		}
		proxy.Cut()
		<-d.(consumer.Leased).Lost()
	}
	var dl []*consumer.Message
	adaptertest.WaitUntil(t, 20*time.Second, "the broker to dead-letter the message", func() bool {
		dl = browse(t, DeadLetterQueue(queue, "ledger"), KeyHeaderDefault)
		return len(dl) == 1
	})
	if dl[0].ID != "crasher" || !strings.Contains(dl[0].Header("x-death"), "delivery_limit") {
		t.Errorf("dead letter %q with x-death %s", dl[0].ID, dl[0].Header("x-death"))
	}
	if r, e := dl[0].Header(consumer.HeaderDeadLetterReason), dl[0].Header(consumer.HeaderError); r != ReasonDeliveryLimit || !strings.Contains(e, queue) || dl[0].Header(consumer.HeaderFailedAt) == "" {
		t.Errorf("broker dead letter without context: reason %q, error %q, failed at %q", r, e, dl[0].Header(consumer.HeaderFailedAt))
	}
	if d := depth(t, queue); d != 0 {
		t.Errorf("source holds %d", d)
	}
	if !strings.Contains(logs.String(), "returned unacknowledged many times") || !strings.Contains(logs.String(), "x-delivery-count=1") {
		t.Errorf("no warning for the redelivery near the limit in:\n%s", logs.String())
	}
}

// TestPublisherRepublishesAfterDisconnect cuts the Publisher's connection
// while it publishes: Publish still returns only when every message is
// confirmed, and all of them are in the queue.
func TestPublisherRepublishesAfterDisconnect(t *testing.T) {
	const n = 5000
	addr, proxy := proxied(t)
	queue := uniqueName("pubcut")
	cleanupTopology(t, queue, "ledger", testTiers)
	p, err := NewPublisher(PublisherConfig{URL: addr, Logger: testLogger(), ReconnectBackoff: retryFast})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Publish(ctx, queue, msgs("m", n)...) }()
	adaptertest.WaitUntil(t, 20*time.Second, "some messages in the queue", func() bool { n, ok := tryDepth(t, queue); return ok && n > 0 })
	proxy.Cut()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := drain(t, queue, KeyHeaderDefault)
	ids := make(map[string]bool)
	for _, m := range got {
		ids[m.ID] = true
	}
	t.Logf("%d messages in the queue for %d distinct IDs (a cut may duplicate, never lose)", len(got), len(ids))
	if len(ids) != n {
		t.Errorf("%d distinct IDs in the queue, want %d", len(ids), n)
	}
}
