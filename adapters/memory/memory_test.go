package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type harness struct{ b *memory.Broker }

func (h harness) NewSource(_ testing.TB, source, name string) consumer.Source {
	return h.b.NewSource(source, name)
}

func (h harness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	if err := h.b.Publish(context.Background(), source, msgs...); err != nil {
		t.Fatal(err)
	}
}

func (h harness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		dl := h.b.DeadLetters(source, name)
		if len(dl) >= n || time.Now().After(deadline) {
			return dl
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FailNextCopy makes the next retry or dead-letter publish fail. The broker's
// faults are not per source; the suite's cases run one at a time.
func (h harness) FailNextCopy(_ testing.TB, _ string, op adaptertest.CopyOp) {
	if op == adaptertest.CopyRetry {
		h.b.InjectFaults(memory.OpRetry, 1)
	} else {
		h.b.InjectFaults(memory.OpDeadLetter, 1)
	}
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, harness{memory.NewBroker()})
}

func msgs(prefix string, n int) []*consumer.Message {
	out := make([]*consumer.Message, n)
	for i := range out {
		out[i] = &consumer.Message{ID: fmt.Sprintf("%s-%d", prefix, i), Key: "k", Body: []byte(fmt.Sprint(i))}
	}
	return out
}

func receive(t *testing.T, src consumer.Source, n int) []consumer.Delivery {
	t.Helper()
	return adaptertest.ReceiveN(t, src, n, 5*time.Second)
}

func TestPublishCopies(t *testing.T) {
	b := memory.NewBroker()
	m := &consumer.Message{ID: "a", Body: []byte("x"), Headers: map[string]string{"h": "1"}}
	if err := b.Publish(t.Context(), "q", m); err != nil {
		t.Fatal(err)
	}
	m.Body[0], m.Headers["h"] = 'y', "2"
	src := b.NewSource("q", "c")
	d := receive(t, src, 1)[0]
	got := d.Message()
	if string(got.Body) != "x" || got.Header("h") != "1" || got.Source != "q" || got.Attempt != 1 || got.Partition != -1 || got.Offset != -1 || got.Timestamp.IsZero() {
		t.Fatalf("delivered %+v", got)
	}
	// The delivered message is a copy too: changing it does not change a redelivery.
	got.Body[0], got.Headers["h"] = 'z', "3"
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	again := receive(t, b.NewSource("q", "c"), 1)[0].Message()
	if string(again.Body) != "x" || again.Header("h") != "1" || again.Attempt != 1 {
		t.Fatalf("redelivered %+v", again)
	}
	if err := b.Publish(t.Context(), "q", nil); err == nil {
		t.Fatal("Publish(nil) succeeded")
	}
	if err := b.Publish(t.Context(), "", m); err == nil {
		t.Fatal("Publish to empty source succeeded")
	}
}

func TestSettleTwice(t *testing.T) {
	b := memory.NewBroker()
	if err := b.Publish(t.Context(), "q", msgs("m", 3)...); err != nil {
		t.Fatal(err)
	}
	src := b.NewSource("q", "c")
	ds := receive(t, src, 3)
	ctx := t.Context()
	if err := ds[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ds[1].Retry(ctx, 0, map[string]string{consumer.HeaderAttempt: "2"}); err != nil {
		t.Fatal(err)
	}
	if err := ds[2].DeadLetter(ctx, map[string]string{consumer.HeaderDeadLetterReason: "permanent"}); err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		for name, settle := range map[string]func() error{
			"ack":         func() error { return d.Ack(ctx) },
			"retry":       func() error { return d.Retry(ctx, 0, nil) },
			"dead-letter": func() error { return d.DeadLetter(ctx, nil) },
		} {
			if err := settle(); !errors.Is(err, consumer.ErrAlreadySettled) {
				t.Errorf("delivery %d settled again by %s: %v, want ErrAlreadySettled", i, name, err)
			}
		}
	}
	if got := len(b.DeadLetters("q", "c")); got != 1 {
		t.Errorf("%d dead letters, want 1", got)
	}
	if got := b.Depth("q"); got != 1 {
		t.Errorf("depth %d, want 1 (the retried copy)", got)
	}
	r := receive(t, src, 1)[0].Message()
	if r.ID != "m-1" || r.Attempt != 2 || r.Header(consumer.HeaderAttempt) != "2" {
		t.Errorf("retried copy %+v", r)
	}
}

// TestAttemptFromHeader: Attempt is the oncely-attempt header of a retried
// copy, or 1 when it is missing or malformed; closing a Source over
// unhandled deliveries never raises it. A producer's oncely-attempt is
// moved aside by Publish: its message starts at attempt 1.
func TestAttemptFromHeader(t *testing.T) {
	b := memory.NewBroker()
	forged := &consumer.Message{ID: "f", Headers: map[string]string{consumer.HeaderAttempt: "4"}}
	if err := b.Publish(t.Context(), "q", &consumer.Message{ID: "a"}, &consumer.Message{ID: "b"}, forged); err != nil {
		t.Fatal(err)
	}
	src := b.NewSource("q", "c")
	ds := receive(t, src, 3)
	for i, h := range []string{"4", "junk"} {
		if err := ds[i].Retry(t.Context(), 0, map[string]string{consumer.HeaderAttempt: h}); err != nil {
			t.Fatal(err)
		}
	}
	if f := ds[2].Message(); f.Attempt != 1 || f.Header(consumer.UntrustedHeaderPrefix+consumer.HeaderAttempt) != "4" {
		t.Errorf("a producer's attempt header: Attempt %d, headers %v", f.Attempt, f.Headers)
	}
	if err := ds[2].Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 3; round++ {
		src := b.NewSource("q", "c")
		ds := receive(t, src, 2)
		if a := ds[0].Message().Attempt; a != 4 {
			t.Errorf("delivery %d of a: Attempt %d, want 4", round, a)
		}
		if a := ds[1].Message().Attempt; a != 1 {
			t.Errorf("delivery %d of b: Attempt %d, want 1", round, a)
		}
		if err := src.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRedeliveryOrderAndCompetingConsumers(t *testing.T) {
	b := memory.NewBroker()
	if err := b.Publish(t.Context(), "q", msgs("m", 6)...); err != nil {
		t.Fatal(err)
	}
	s1, s2 := b.NewSource("q", "c"), b.NewSource("q", "c")
	a := receive(t, s1, 2) // m-0 m-1
	c := receive(t, s2, 2) // m-2 m-3
	if a[0].Message().ID != "m-0" || c[0].Message().ID != "m-2" {
		t.Fatalf("competing consumers got %s and %s", a[0].Message().ID, c[0].Message().ID)
	}
	if got := b.InFlight("q"); got != 4 {
		t.Fatalf("in flight %d, want 4", got)
	}
	if err := a[1].Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a[0].Ack(t.Context()); !errors.Is(err, consumer.ErrSourceClosed) {
		t.Fatalf("ack after close: %v, want ErrSourceClosed", err)
	}
	if _, err := s1.Receive(t.Context(), 1); !errors.Is(err, consumer.ErrSourceClosed) {
		t.Fatalf("receive after close: %v", err)
	}
	if err := s1.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// m-0 comes back first, before m-4 and m-5.
	var ids []string
	for _, d := range receive(t, s2, 3) {
		ids = append(ids, d.Message().ID)
	}
	if fmt.Sprint(ids) != "[m-0 m-4 m-5]" {
		t.Fatalf("after close got %v, want [m-0 m-4 m-5]", ids)
	}
	if got := b.Depth("q"); got != 5 {
		t.Fatalf("depth %d, want 5", got)
	}
	bl, err := s2.(consumer.BacklogReporter).Backlog(t.Context())
	if err != nil || len(bl) != 1 || bl[0].Lag != 5 || bl[0].Source != "q" || bl[0].Partition != -1 || bl[0].DeadLetters != 0 {
		t.Fatalf("backlog %+v, %v", bl, err)
	}
	if err := s2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestReceiveBlocksUntilPublishOrCancel(t *testing.T) {
	b := memory.NewBroker()
	src := b.NewSource("q", "c")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if ds, err := src.Receive(ctx, 1); !errors.Is(err, context.DeadlineExceeded) || len(ds) != 0 {
		t.Fatalf("empty queue: %d deliveries, %v", len(ds), err)
	}
	got := make(chan []consumer.Delivery, 1)
	go func() {
		ds, err := src.Receive(context.Background(), 10)
		if err != nil {
			t.Error(err)
		}
		got <- ds
	}()
	if err := b.Publish(t.Context(), "q", msgs("m", 1)...); err != nil {
		t.Fatal(err)
	}
	select {
	case ds := <-got:
		if len(ds) != 1 {
			t.Fatalf("%d deliveries", len(ds))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not wake up on Publish")
	}
	// Close wakes a blocked Receive.
	errc := make(chan error, 1)
	go func() { _, err := src.Receive(context.Background(), 1); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, consumer.ErrSourceClosed) {
		t.Fatalf("Receive after Close: %v", err)
	}
	if _, err := b.NewSource("q", "c").Receive(t.Context(), 0); err == nil {
		t.Fatal("Receive(0) succeeded")
	}
}

func TestRetryDelay(t *testing.T) {
	b := memory.NewBroker()
	if err := b.Publish(t.Context(), "q", msgs("m", 1)...); err != nil {
		t.Fatal(err)
	}
	src := b.NewSource("q", "c")
	defer src.Close(t.Context())
	d := receive(t, src, 1)[0]
	const delay = 150 * time.Millisecond
	start := time.Now()
	if err := d.Retry(t.Context(), delay, map[string]string{consumer.HeaderAttempt: "2"}); err != nil {
		t.Fatal(err)
	}
	// Published later but ready at once: delivered before the delayed copy.
	if err := b.Publish(t.Context(), "q", &consumer.Message{ID: "later"}); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, src, 1)[0].Message(); m.ID != "later" {
		t.Fatalf("got %s first, want later", m.ID)
	}
	m := receive(t, src, 1)[0].Message()
	if el := time.Since(start); el < delay {
		t.Fatalf("retried copy delivered after %s, before its %s delay", el, delay)
	}
	if m.ID != "m-0" || m.Attempt != 2 {
		t.Fatalf("retried copy %+v", m)
	}
}

func TestInjectFaults(t *testing.T) {
	b := memory.NewBroker()
	if err := b.Publish(t.Context(), "q", msgs("m", 1)...); err != nil {
		t.Fatal(err)
	}
	src := b.NewSource("q", "c")
	defer src.Close(t.Context())
	b.InjectFaults(memory.OpReceive, 1)
	if _, err := src.Receive(t.Context(), 1); !errors.Is(err, memory.ErrInjected) {
		t.Fatalf("receive: %v", err)
	}
	d := receive(t, src, 1)[0]
	ctx := t.Context()
	b.InjectFaults(memory.OpDeadLetter, 2)
	b.InjectFaults(memory.OpRetry, 1)
	b.InjectFaults(memory.OpAck, 1)
	for range 2 {
		if err := d.DeadLetter(ctx, nil); !errors.Is(err, memory.ErrInjected) {
			t.Fatalf("dead-letter: %v", err)
		}
	}
	if err := d.Retry(ctx, 0, nil); !errors.Is(err, memory.ErrInjected) {
		t.Fatalf("retry: %v", err)
	}
	if err := d.Ack(ctx); !errors.Is(err, memory.ErrInjected) {
		t.Fatalf("ack: %v", err)
	}
	if len(b.DeadLetters("q", "c")) != 0 || b.Depth("q") != 1 || b.InFlight("q") != 1 {
		t.Fatalf("a failed settlement had an effect: dlq %d depth %d", len(b.DeadLetters("q", "c")), b.Depth("q"))
	}
	if err := d.DeadLetter(ctx, map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	if dl := b.DeadLetters("q", "c"); len(dl) != 1 || dl[0].Header("a") != "b" || dl[0].ID != "m-0" || b.Depth("q") != 0 {
		t.Fatalf("dead letters %v, depth %d", dl, b.Depth("q"))
	}
	if b.Depth("unknown") != 0 || b.InFlight("unknown") != 0 {
		t.Fatal("unknown source has depth")
	}
}

// TestRemoveDeadLetter: dead letters are numbered by Offset, and removing
// one removes exactly that copy, not other copies with its message ID.
func TestRemoveDeadLetter(t *testing.T) {
	b := memory.NewBroker()
	if err := b.Publish(t.Context(), "q", msgs("m", 3)...); err != nil {
		t.Fatal(err)
	}
	src := b.NewSource("q", "c")
	defer src.Close(t.Context())
	ds := receive(t, src, 3)
	// m-0 twice (an at-least-once DLQ publish), m-1 once.
	if err := ds[0].DeadLetter(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := ds[1].DeadLetter(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), "q", &consumer.Message{ID: "m-0"}); err != nil {
		t.Fatal(err)
	}
	again := receive(t, src, 1) // m-2 is still in flight
	if m := again[0].Message(); m.ID != "m-0" {
		t.Fatalf("got %s, want the republished m-0", m.ID)
	}
	if err := again[0].DeadLetter(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	offsets := func() (out []string) {
		for _, m := range b.DeadLetters("q", "c") {
			out = append(out, fmt.Sprintf("%s@%d", m.ID, m.Offset))
		}
		return out
	}
	if got := fmt.Sprint(offsets()); got != "[m-0@0 m-1@1 m-0@2]" {
		t.Fatalf("dead letters %s, want [m-0@0 m-1@1 m-0@2]", got)
	}
	if !b.RemoveDeadLetter("q", "c", 0) {
		t.Fatal("offset 0 was not removed")
	}
	if b.RemoveDeadLetter("q", "c", 0) || b.RemoveDeadLetter("q", "c", 3) || b.RemoveDeadLetter("q", "other", 1) {
		t.Fatal("removed a dead letter that is not there")
	}
	if got := fmt.Sprint(offsets()); got != "[m-1@1 m-0@2]" {
		t.Fatalf("left %s, want [m-1@1 m-0@2]: only the removed copy goes", got)
	}
	// Offsets are never reused.
	if err := b.Publish(t.Context(), "q", &consumer.Message{ID: "m-3"}); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, src, 1)[0].DeadLetter(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(offsets()); got != "[m-1@1 m-0@2 m-3@3]" {
		t.Fatalf("dead letters %s, want [m-1@1 m-0@2 m-3@3]", got)
	}
}
