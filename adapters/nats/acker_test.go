package nats

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
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
