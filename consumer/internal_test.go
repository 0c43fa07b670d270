package consumer

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSettleCtx(t *testing.T) {
	parent := WithName(context.WithoutCancel(context.Background()), "n")

	c := newSettleCtx(parent, time.Hour)
	if dl, ok := c.Deadline(); !ok || time.Until(dl) < 59*time.Minute {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	if c.Err() != nil || NameFromContext(c) != "n" {
		t.Fatalf("fresh ctx: err %v, name %q", c.Err(), NameFromContext(c))
	}
	done := c.Done()
	select {
	case <-done:
		t.Fatal("done before cancel")
	default:
	}
	c.cancel()
	<-done
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v", c.Err())
	}
	c.cancel() // idempotent

	// The deadline fires through Done's timer.
	c = newSettleCtx(parent, 20*time.Millisecond)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("deadline did not close Done")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("after deadline: %v", c.Err())
	}
	c.cancel()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("cancel after deadline changed Err to %v", c.Err())
	}

	// Err notices the deadline without Done; a later Done is closed at once.
	c = newSettleCtx(parent, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after deadline: %v", c.Err())
	}
	<-c.Done()

	// Children see the cancellation.
	c = newSettleCtx(parent, time.Hour)
	child, stop := context.WithCancel(c)
	defer stop()
	c.cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("child not cancelled")
	}
}

func TestAttemptCtx(t *testing.T) {
	base := WithName(context.Background(), "n")
	ctx := WithAttemptState(base)
	if IsDuplicate(ctx) || NameFromContext(ctx) != "n" {
		t.Fatal("fresh attempt")
	}
	MarkDuplicate(ctx)
	if !IsDuplicate(ctx) {
		t.Fatal("MarkDuplicate not recorded")
	}
	if IsDuplicate(WithAttemptState(base)) {
		t.Fatal("state shared between attempts")
	}
	MarkDuplicate(base) // no state: no effect, no panic
}

func TestWindow(t *testing.T) {
	w := newWindow(8, 8, 2)
	if w.refill != 4 {
		t.Fatalf("refill %d, want 4", w.refill)
	}
	ctx := context.Background()
	if n, err := w.acquire(ctx, 3); n != 3 || err != nil {
		t.Fatalf("acquire: %d %v", n, err)
	}
	// Not full yet: any free slot is taken, without waiting for refill.
	for want := 5; want > 0; want-- {
		if n, err := w.acquire(ctx, 1); n != 1 || err != nil {
			t.Fatalf("acquire with %d free: %d %v", want, n, err)
		}
	}
	// Full: intake now waits for refill free slots.
	got := make(chan int, 1)
	go func() {
		n, _ := w.acquire(ctx, 8)
		got <- n
	}()
	for range 3 {
		w.release(1)
	}
	select {
	case n := <-got:
		t.Fatalf("intake woke with %d free slots, below refill 4", n)
	case <-time.After(20 * time.Millisecond):
	}
	w.release(1)
	select {
	case n := <-got:
		if n != 4 {
			t.Fatalf("took %d, want 4", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("intake not woken at refill")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.acquireN(cctx, 1, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire on a full window with a cancelled ctx: %v", err)
	}
	// Slots given back (a short Receive) mean the window is not full: one
	// free slot is enough again.
	w = newWindow(8, 8, 2)
	if n, _ := w.acquire(ctx, 8); n != 8 {
		t.Fatalf("took %d", n)
	}
	w.giveBack(1)
	if n, err := w.acquire(ctx, 8); n != 1 || err != nil {
		t.Fatalf("after giveBack: %d %v", n, err)
	}
	if small := newWindow(2, 2, 2); small.refill != 1 {
		t.Fatalf("refill of a window no larger than the workers: %d", small.refill)
	}
}
