package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// sliceSource is a minimal Source for runtime smoke tests.
type sliceSource struct {
	mu      sync.Mutex
	pending []*consumer.Message
	acked   []string
	retried []string
	dead    map[string]map[string]string
	closed  chan struct{}
	once    sync.Once
}

type sliceDelivery struct {
	s *sliceSource
	m *consumer.Message
}

func (d *sliceDelivery) Message() *consumer.Message { return d.m }
func (d *sliceDelivery) Ack(context.Context) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	d.s.acked = append(d.s.acked, d.m.ID)
	return nil
}
func (d *sliceDelivery) Retry(_ context.Context, _ time.Duration, h map[string]string) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	c := d.m.Clone()
	c.Headers = h
	c.Attempt = consumer.AttemptFromHeaders(h)
	d.s.pending = append(d.s.pending, c)
	d.s.retried = append(d.s.retried, d.m.ID)
	return nil
}
func (d *sliceDelivery) DeadLetter(_ context.Context, h map[string]string) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	d.s.dead[d.m.ID] = h
	return nil
}

func (s *sliceSource) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	for {
		s.mu.Lock()
		if len(s.pending) > 0 {
			n := min(max, len(s.pending))
			out := make([]consumer.Delivery, n)
			for i := range n {
				out[i] = &sliceDelivery{s: s, m: s.pending[i]}
			}
			s.pending = s.pending[n:]
			s.mu.Unlock()
			return out, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.closed:
			return nil, consumer.ErrSourceClosed
		case <-time.After(time.Millisecond):
		}
	}
}
func (s *sliceSource) Close(context.Context) error {
	s.once.Do(func() { close(s.closed) })
	return nil
}
func (s *sliceSource) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "slice"}
}

func TestSmoke(t *testing.T) {
	src := &sliceSource{dead: map[string]map[string]string{}, closed: make(chan struct{})}
	for i := range 20 {
		src.pending = append(src.pending, &consumer.Message{ID: fmt.Sprint(i), Key: fmt.Sprint(i % 3), Attempt: 1, Partition: -1, Offset: -1, Source: "s"})
	}
	src.pending = append(src.pending, &consumer.Message{ID: "", Attempt: 1, Partition: -1, Offset: -1})
	var mu sync.Mutex
	seen := 0
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		if m.ID == "7" {
			return errors.New("boom")
		}
		if m.ID == "9" {
			panic("kaboom")
		}
		mu.Lock()
		seen++
		mu.Unlock()
		return nil
	})
	c, err := consumer.New(src, h, consumer.Config{Name: "smoke", Concurrency: 4, Retry: retryFast()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for {
			src.mu.Lock()
			n := len(src.dead)
			src.mu.Unlock()
			if n == 3 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		c.Stop(ctx)
	}()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if seen != 18 || len(src.acked) != 18 {
		t.Fatalf("seen %d acked %d", seen, len(src.acked))
	}
	if src.dead["7"][consumer.HeaderDeadLetterReason] != consumer.ReasonExhausted || src.dead["9"][consumer.HeaderDeadLetterReason] != consumer.ReasonPanic || src.dead[""][consumer.HeaderDeadLetterReason] != consumer.ReasonMissingID {
		t.Fatalf("dead %v", src.dead)
	}
	if src.dead["7"][consumer.HeaderAttempt] != "3" {
		t.Fatalf("attempt header %q", src.dead["7"][consumer.HeaderAttempt])
	}
}

func retryFast() retry.Policy {
	return retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}
}
