package nats

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestLongRetriesDoNotBlockShort: more retried copies waiting out a long
// delay than MaxAckPending, then one with a short delay behind them in the
// retry stream: the short one is delivered once due, not held back until
// the long ones are. The retry consumer exists, with MaxAckPending 8, as an
// earlier version created it: New lifts the limit.
func TestLongRetriesDoNotBlockShort(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("retrytiers")
	cfg := Config{Source: source, Consumer: "retrytiers", Prefetch: 8, MaxAckPending: 8}
	c.cleanup(t, source, cfg.Consumer)
	long := 2 * cfg.MaxAckPending
	var msgs []*consumer.Message
	for i := range long {
		msgs = append(msgs, &consumer.Message{ID: fmt.Sprintf("long-%02d", i), Body: []byte("b")})
	}
	msgs = append(msgs, &consumer.Message{ID: "short", Body: []byte("b")})
	c.publish(t, source, msgs...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	retries, err := ensureStream(ctx, c.js, RetrySubject(source, cfg.Consumer), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := retries.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: cfg.Consumer, AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: cfg.MaxAckPending, MaxDeliver: 100, DeliverPolicy: jetstream.DeliverAllPolicy}); err != nil {
		t.Fatal(err)
	}

	src := c.newSource(t, cfg)
	defer closeSrc(t, src)
	retried := 0
	var due time.Time
	for retried < len(msgs) { // in stream order: the short copy is the retry stream's last
		for _, d := range adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout) {
			after := time.Hour
			if d.Message().ID == "short" {
				after = 500 * time.Millisecond
				due = time.Now().Add(after)
			}
			if err := d.Retry(ctx, after, map[string]string{consumer.HeaderAttempt: "2"}); err != nil {
				t.Fatalf("retrying %s: %v", d.Message().ID, err)
			}
			retried++
		}
	}
	d := adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout)[0]
	if got := d.Message(); got.ID != "short" || got.Attempt != 2 {
		t.Fatalf("got %q attempt %d, want short attempt 2", got.ID, got.Attempt)
	}
	if now := time.Now(); now.Before(due) {
		t.Errorf("the short copy came %s before it was due", due.Sub(now))
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRetriedCopyNotDeadLetteredEarly: with the smallest delivery limit
// (MaxDeliver 2), a retried copy is delivered once it is due, not
// dead-lettered: its delivery before it was due, nak'd with the rest of
// its delay, does not count against the limit.
func TestRetriedCopyNotDeadLetteredEarly(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("retrylimit")
	cfg := Config{Source: source, Consumer: "retrylimit", MaxDeliver: 2}
	c.cleanup(t, source, cfg.Consumer)
	c.publish(t, source, &consumer.Message{ID: "m-1", Body: []byte("b")})
	src := c.newSource(t, cfg)
	defer closeSrc(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout)[0]
	if err := d.Retry(ctx, time.Second, map[string]string{consumer.HeaderAttempt: "2"}); err != nil {
		t.Fatal(err)
	}
	d = adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout)[0]
	if got := d.Message(); got.ID != "m-1" || got.Attempt != 2 {
		t.Fatalf("got %q attempt %d, want m-1 attempt 2", got.ID, got.Attempt)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if dl := c.deadLetters(t, source, cfg.Consumer); len(dl) != 0 {
		t.Errorf("%d dead letters, want none", len(dl))
	}
}
