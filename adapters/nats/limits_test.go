package nats

import (
	"context"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestDeliveryLimit: a message given back unsettled until its last delivery
// (MaxDeliver) is dead-lettered by the Source with reason delivery-limit and
// its full content, and never handed out again.
func TestDeliveryLimit(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("limit")
	cfg := Config{Source: source, Consumer: "limit", MaxDeliver: 2}
	c.cleanup(t, source, cfg.Consumer)
	m := &consumer.Message{ID: "poison-1", Key: "k", Body: []byte("body"), Headers: map[string]string{"x-custom": "kept"}}
	c.publish(t, source, m)

	first := c.newSource(t, cfg)
	d := adaptertest.ReceiveN(t, first, 1, adaptertest.WaitTimeout)[0]
	if d.Message().ID != m.ID {
		t.Fatalf("got %q, want %q", d.Message().ID, m.ID)
	}
	closeSrc(t, first) // delivery 1 given back: the next is the last

	second := c.newSource(t, cfg)
	defer closeSrc(t, second)
	var dl []*consumer.Message
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the dead letter", func() bool {
		dl = c.deadLetters(t, source, cfg.Consumer)
		return len(dl) > 0
	})
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	got := dl[0]
	if got.ID != m.ID || got.Key != m.Key || string(got.Body) != "body" || got.Header("x-custom") != "kept" ||
		got.Header(consumer.HeaderDeadLetterReason) != ReasonDeliveryLimit || got.Header(consumer.HeaderConsumer) != cfg.Consumer ||
		got.Header(consumer.HeaderOriginalSource) != source || got.Header(consumer.HeaderError) == "" {
		t.Errorf("dead letter %q key %q body %q headers %v", got.ID, got.Key, got.Body, got.Headers)
	}
	adaptertest.AssertQuiet(t, second, adaptertest.QuietWindow)
}

// TestLeaseRenewal: a delivery held past several AckWaits is not redelivered
// to another Source of the consumer (in-progress acks renew its lease), and
// its ack then settles it.
func TestLeaseRenewal(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("lease")
	cfg := Config{Source: source, Consumer: "lease", AckWait: 2 * time.Second}
	c.cleanup(t, source, cfg.Consumer)
	c.publish(t, source, &consumer.Message{ID: "long-1", Body: []byte("b")})

	holder := c.newSource(t, cfg)
	defer closeSrc(t, holder)
	d := adaptertest.ReceiveN(t, holder, 1, adaptertest.WaitTimeout)[0]
	other := c.newSource(t, cfg)
	defer closeSrc(t, other)
	adaptertest.AssertQuiet(t, other, 3*cfg.AckWait)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.Ack(ctx); err != nil {
		t.Fatalf("ack: %v", err)
	}
	adaptertest.AssertQuiet(t, other, 2*cfg.AckWait)
}

func closeSrc(t testing.TB, src consumer.Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := src.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestConsumerRecreated: when the durable consumer (or its stream) is
// deleted under a running Source, the Source opens it again by itself and
// goes on delivering: intake never stops for good.
func TestConsumerRecreated(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("recreate")
	cfg := Config{Source: source, Consumer: "recreate"}
	c.cleanup(t, source, cfg.Consumer)
	src := c.newSource(t, cfg)
	defer closeSrc(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.js.DeleteConsumer(ctx, StreamName(source), cfg.Consumer); err != nil {
		t.Fatalf("deleting the consumer: %v", err)
	}
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the consumer recreated", func() bool {
		_, err := c.js.Consumer(ctx, StreamName(source), cfg.Consumer)
		return err == nil
	})
	c.publish(t, source, &consumer.Message{ID: "after-1", Body: []byte("b")})
	d := adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout)[0]
	if d.Message().ID != "after-1" {
		t.Fatalf("got %q, want after-1", d.Message().ID)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}
