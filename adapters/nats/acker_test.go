package nats

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAck counts its acks.
type fakeAck struct{ acked *atomic.Int64 }

func (f fakeAck) Ack() error { f.acked.Add(1); return nil }

// TestAckerStopSendsQueued queues acks while a burst's flush is stuck, stops
// the acker, then lets the flush return: stop must send and flush the acks
// still queued. The bug it catches: stop (Source.Close) dropping the queue,
// so acks of handled messages never reach the server and the messages are
// redelivered.
func TestAckerStopSendsQueued(t *testing.T) {
	var acked atomic.Int64
	var flushes atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	a := newAcker(func() error {
		if flushes.Add(1) == 1 {
			close(entered)
			<-release
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	m := fakeAck{&acked}
	if err := a.ack(m); err != nil {
		t.Fatal(err)
	}
	<-entered // the first burst (one ack) is flushing
	for range 9 {
		if err := a.ack(m); err != nil {
			t.Fatal(err)
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- a.stop() }()
	<-a.stopc // stop has begun: the loop will not start another burst
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := acked.Load(); got != 10 {
		t.Fatalf("acks sent after stop: got %d, want 10", got)
	}
	if got := flushes.Load(); got != 2 {
		t.Fatalf("flushes: got %d, want 2 (the burst's and stop's)", got)
	}
	// After stop an ack is sent and flushed at once.
	if err := a.ack(m); err != nil {
		t.Fatal(err)
	}
	if got, f := acked.Load(), flushes.Load(); got != 11 || f != 3 {
		t.Fatalf("after stop: acks %d, flushes %d; want 11 and 3", got, f)
	}
}

// TestAckerBursts checks that acks queued while a flush is under way go out
// together with a single flush after it, and that a flush's error is
// returned by stop only when stop's own flush fails.
func TestAckerBursts(t *testing.T) {
	var acked atomic.Int64
	var flushes atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	fail := errors.New("connection closed")
	var failStop atomic.Bool
	a := newAcker(func() error {
		n := flushes.Add(1)
		if n == 1 {
			close(entered)
			<-release
		}
		if failStop.Load() {
			return fail
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	m := fakeAck{&acked}
	_ = a.ack(m)
	<-entered
	for range 50 {
		_ = a.ack(m)
	}
	close(release)
	// The 50 queued go out in one more burst: wait for its flush by
	// stopping (stop waits for the loop), then count.
	failStop.Store(true)
	if err := a.stop(); !errors.Is(err, fail) {
		t.Fatalf("stop: got %v, want the flush's error", err)
	}
	if got := acked.Load(); got != 51 {
		t.Fatalf("acks: got %d, want 51", got)
	}
	if got := flushes.Load(); got > 3 {
		t.Fatalf("flushes: got %d for 51 acks in 2 bursts, want at most 3 (one a burst, one for stop)", got)
	}
}

// TestAckerLingersBeforeEachBurst checks that the acker waits ackLinger
// before every burst of fewer than ackLingerBurst acks, also right after a
// burst while acks keep coming, and sends a full burst at once. The bug it
// catches: bursts back to back under a steady stream of acks (one flush,
// a PING and its PONG, for every few acks). The linger is a channel the
// test fires; flushes are counted, never timed.
func TestAckerLingersBeforeEachBurst(t *testing.T) {
	var acked, flushes atomic.Int64
	flushed := make(chan struct{}, 8)
	entered, release := make(chan struct{}), make(chan struct{})
	a := newAcker(func() error {
		if flushes.Add(1) == 1 {
			close(entered)
			<-release // the first burst's flush is slow
		}
		flushed <- struct{}{}
		return nil
	}, slog.New(slog.DiscardHandler))
	lingering, fire := make(chan struct{}, 1), make(chan time.Time)
	// Set before the first ack wakes the loop, which reads it.
	a.after = func(time.Duration) <-chan time.Time {
		lingering <- struct{}{}
		return fire
	}
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("acked %d, flushed %d: no %s", acked.Load(), flushes.Load(), what)
		}
	}
	m := fakeAck{&acked}
	_ = a.ack(m)
	wait(lingering, "linger before the first burst")
	fire <- time.Time{}
	<-entered
	for range 10 { // queued while the first burst's flush is under way
		_ = a.ack(m)
	}
	close(release)
	wait(flushed, "first flush")
	wait(lingering, "linger before the second burst")
	if got := acked.Load(); got != 1 {
		t.Fatalf("acked %d while lingering, want 1 (the second burst waits)", got)
	}
	fire <- time.Time{}
	wait(flushed, "second flush")
	if got := acked.Load(); got != 11 {
		t.Fatalf("acked %d after the second burst, want 11", got)
	}
	// A full burst goes at once: queue ackLingerBurst acks while the
	// acker waits for its next wake, with the linger left unfired.
	a.mu.Lock()
	for range ackLingerBurst {
		a.queue = append(a.queue, m)
	}
	a.mu.Unlock()
	a.wake <- struct{}{}
	wait(flushed, "full burst sent without lingering")
	if got := acked.Load(); got != 11+ackLingerBurst {
		t.Fatalf("acked %d, want %d", got, 11+ackLingerBurst)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}
