package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// stuckCopySource wraps a memory source: its deliveries' Retry and
// DeadLetter wait until gate closes, as a copy does while its destination's
// leader is being elected.
type stuckCopySource struct {
	consumer.Source
	gate    chan struct{}
	waiting atomic.Int32 // copies waiting on gate
}

func (s *stuckCopySource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	ds, err := s.Source.Receive(ctx, n)
	for i, d := range ds {
		ds[i] = &stuckCopyDelivery{Delivery: d, s: s}
	}
	return ds, err
}

type stuckCopyDelivery struct {
	consumer.Delivery
	s *stuckCopySource
}

func (d *stuckCopyDelivery) wait(ctx context.Context) error {
	d.s.waiting.Add(1)
	select {
	case <-d.s.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *stuckCopyDelivery) Retry(ctx context.Context, after time.Duration, h map[string]string) error {
	if err := d.wait(ctx); err != nil {
		return err
	}
	return d.Delivery.Retry(ctx, after, h)
}

func (d *stuckCopyDelivery) DeadLetter(ctx context.Context, h map[string]string) error {
	if err := d.wait(ctx); err != nil {
		return err
	}
	return d.Delivery.DeadLetter(ctx, h)
}

// TestStuckCopyHoldsOnlyItsMessages: while the dead-letter destination
// hangs, more failing messages than there are workers wait for their
// copies, and every message published after them is still handled and
// acked; once the destination answers, the copies complete and a stop
// drains them. Catches copies settled on the workers: with two workers, two
// hanging copies stopped the whole consumer until the destination came
// back.
func TestStuckCopyHoldsOnlyItsMessages(t *testing.T) {
	b := memory.NewBroker()
	publish := func(msgs ...*consumer.Message) {
		t.Helper()
		if err := b.Publish(context.Background(), "src", msgs...); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		publish(&consumer.Message{ID: fmt.Sprintf("poison-%d", i), Key: fmt.Sprintf("p%d", i), Body: []byte("poison")})
	}
	src := &stuckCopySource{Source: b.NewSource("src", "test"), gate: make(chan struct{})}
	var ok atomic.Int32
	allOK := make(chan struct{})
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		if string(m.Body) == "poison" {
			return consumer.Permanent(errors.New("poison"))
		}
		if ok.Add(1) == 40 {
			close(allOK)
		}
		return nil
	})
	rec := newRecorder()
	c, err := consumer.New(src, h, consumer.Config{
		Name: "test", Concurrency: 2, MaxInFlight: 16, Logger: discard, Observer: rec,
		Duplicates: consumer.AllowDuplicates("test: counts deliveries"),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := startConsumer(t, c)
	defer func() {
		select {
		case <-src.gate:
		default:
			close(src.gate) // a failed check leaves nothing waiting
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for src.waiting.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 4 dead-letter copies started with 2 workers: the rest wait for a worker", src.waiting.Load())
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 40 {
		publish(&consumer.Message{ID: fmt.Sprintf("ok-%d", i), Key: fmt.Sprintf("k%d", i%4), Body: []byte("ok")})
	}
	select {
	case <-allOK:
	case <-time.After(20 * time.Second):
		t.Fatalf("with 4 copies waiting on their destination, %d of 40 other messages were handled", ok.Load())
	}
	waitFor(t, "40 acks", func() bool { return rec.count(consumer.OutcomeProcessed) == 40 })
	if n := rec.count(consumer.OutcomeDeadLettered); n != 0 {
		t.Errorf("dead-lettered before the destination answered: %d", n)
	}
	close(src.gate)
	waitFor(t, "the copies settled", func() bool { return rec.count(consumer.OutcomeDeadLettered) == 4 })
	stop()
	if dl := b.DeadLetters("src", "test"); len(dl) != 4 {
		t.Errorf("dead letters: expected 4, actual %d", len(dl))
	}
}
