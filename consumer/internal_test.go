package consumer

import (
	"context"
	"errors"
	"hash/maphash"
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

	// A reused context starts afresh: no error, a new Done, a deadline
	// from its first use.
	c.init(time.Hour)
	if c.Err() != nil {
		t.Fatalf("reused after cancel: %v", c.Err())
	}
	if dl, _ := c.Deadline(); time.Until(dl) < 59*time.Minute {
		t.Fatalf("reused deadline %v", dl)
	}
	done = c.Done()
	select {
	case <-done:
		t.Fatal("reused: done before cancel")
	default:
	}
	c.cancel()
	<-done
	// Unused since init, it is reset by init only when the timeout changes.
	c.init(time.Hour)
	c.cancel()
	c.init(10 * time.Millisecond)
	if dl, _ := c.Deadline(); time.Until(dl) > time.Minute {
		t.Fatalf("new timeout not applied: deadline %v", dl)
	}
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("reused with short timeout: %v", c.Err())
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

func TestWindowWaitIdle(t *testing.T) {
	w := newWindow(8, 8, 2)
	ctx := context.Background()
	if !w.waitIdle(ctx) {
		t.Fatal("an empty window is idle")
	}
	if n, _ := w.acquire(ctx, 3); n != 3 {
		t.Fatalf("took %d", n)
	}
	idle := make(chan bool, 1)
	go func() { idle <- w.waitIdle(ctx) }()
	w.release(2)
	select {
	case <-idle:
		t.Fatal("idle with a slot taken")
	case <-time.After(20 * time.Millisecond):
	}
	w.release(1)
	select {
	case ok := <-idle:
		if !ok {
			t.Fatal("waitIdle reported false")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waitIdle not woken by the last release")
	}
	// A done ctx ends the wait.
	if n, _ := w.acquire(ctx, 1); n != 1 {
		t.Fatalf("took %d", n)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if w.waitIdle(cctx) {
		t.Fatal("idle with a slot taken")
	}
	if w.need.Load() != 0 {
		t.Fatalf("need %d left after the wait ended", w.need.Load())
	}
}

// TestWindowWaiting checks what the batch scheduler reads of intake:
// waiting is false while intake holds slots for a Receive under way, and
// true, with onWait called, once intake waits for room, here for a refill
// with a slot free. Bugs caught: a Receive under way taken for a full
// window (a partial batch started that it could have filled), a wait for
// refill with a slot free not reported (the batch lingered BatchMaxWait),
// a wait begun with no wake-up for the scheduler.
func TestWindowWaiting(t *testing.T) {
	w := newWindow(8, 8, 1)
	waits := make(chan bool, 4)
	w.onWait = func() { waits <- w.waiting() }
	ctx := context.Background()
	if n, _ := w.acquire(ctx, 8); n != 8 {
		t.Fatalf("took %d", n)
	}
	if w.waiting() {
		t.Fatal("waiting, with the slots taken for a Receive under way")
	}
	w.release(3) // a batch of 3 ran; intake now needs 4 free
	got := make(chan int, 1)
	go func() {
		n, _ := w.acquire(ctx, 8)
		got <- n
	}()
	select {
	case ok := <-waits:
		if !ok {
			t.Fatal("onWait called before waiting reports true")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("intake waits for refill, yet onWait was not called")
	}
	if !w.waiting() {
		t.Fatal("not waiting, with 3 free slots and a refill of 4")
	}
	w.release(1)
	if n := <-got; n != 4 {
		t.Fatalf("took %d, want 4", n)
	}
	if w.waiting() {
		t.Fatal("waiting after the take")
	}
}

// TestLaneTable: with every key in one slot, busy lanes stay exact (one
// per key or partition), a released lane is reused for the next key of its
// slot and keeps no key, and the chain holds no more lanes than were busy
// at once.
func TestLaneTable(t *testing.T) {
	tb := laneTable[int]{slots: make([]*lane[int], 1), seed: maphash.MakeSeed()}
	key := func(k string) laneKey { return laneKey{kind: laneByKey, key: k} }
	part0 := laneKey{kind: laneByPartition}
	chain := func() (n int) {
		for l := tb.slots[0]; l != nil; l = l.next {
			n++
		}
		return n
	}
	a, busy := tb.lookup(key("a"))
	if busy {
		t.Fatal("new key a reported busy")
	}
	b, busy := tb.lookup(key("b"))
	if busy || b == a {
		t.Fatalf("key b: busy %v, same lane as a %v", busy, b == a)
	}
	p, busy := tb.lookup(part0)
	if busy || p == a || p == b {
		t.Fatal("partition 0 shares a key's lane or is busy")
	}
	if l, busy := tb.lookup(key("a")); !busy || l != a {
		t.Fatalf("key a again: busy %v, its lane %v", busy, l == a)
	}
	if l, busy := tb.lookup(part0); !busy || l != p {
		t.Fatalf("partition 0 again: busy %v, its lane %v", busy, l == p)
	}
	tb.release(a)
	if a.key != (laneKey{}) || a.busy {
		t.Fatalf("released lane keeps key %+v, busy %v", a.key, a.busy)
	}
	c, busy := tb.lookup(key("c"))
	if busy || c != a || c.key != key("c") {
		t.Fatalf("key c: busy %v, reuses the idle lane %v, key %+v", busy, c == a, c.key)
	}
	d, busy := tb.lookup(key("a"))
	if busy || d == b || d == c || d == p {
		t.Fatalf("key a after its release: busy %v, or shares a busy lane", busy)
	}
	if n := chain(); n != 4 {
		t.Fatalf("chain of %d lanes, want 4 (the most busy at once)", n)
	}
	for _, l := range []*lane[int]{b, c, d, p} {
		tb.release(l)
	}
	for _, k := range []string{"x", "y", "z", "w"} {
		if _, busy := tb.lookup(key(k)); busy {
			t.Fatalf("key %s busy", k)
		}
	}
	if n := chain(); n != 4 {
		t.Fatalf("chain of %d lanes after reuse, want 4", n)
	}
}

func TestSoloClaims(t *testing.T) {
	// Claims from 0 grow 1, 2, 4, then soloClaimMax, and soloClaimStart
	// finds each claim's start from its end.
	var from int32
	want := []int32{1, 2, 4}
	for i := range 20 {
		size := soloClaimSize(from)
		if i < len(want) && size != want[i] || i >= len(want) && size != soloClaimMax {
			t.Fatalf("claim %d from %d: size %d", i, from, size)
		}
		if got := soloClaimStart(from + size); got != from {
			t.Fatalf("soloClaimStart(%d) = %d, want %d", from+size, got, from)
		}
		from += size
	}
	if got := soloClaimStart(0); got != 0 {
		t.Fatalf("soloClaimStart(0) = %d", got)
	}
}

// TestAttemptCtxValue: an attempt context answers its own keys, and any
// other key, including one of another type with the same integer value,
// from its parent.
func TestAttemptCtxValue(t *testing.T) {
	type otherKey int
	parent := context.WithValue(WithName(context.Background(), "parent"), otherKey(nameKey), "other")
	c := &attemptCtx{Context: parent, ident: &ctxIdent{name: "ledger", broker: "kafka"}}
	if got := NameFromContext(c); got != "ledger" {
		t.Fatalf("name %q", got)
	}
	if got := BrokerFromContext(c); got != "kafka" {
		t.Fatalf("broker %q", got)
	}
	if got := c.Value(otherKey(nameKey)); got != "other" {
		t.Fatalf("foreign key with nameKey's value: %v", got)
	}
	if got := c.Value(stateKey); got != &c.state {
		t.Fatalf("state %v", got)
	}
	if got := NameFromContext(&attemptCtx{Context: parent}); got != "parent" {
		t.Fatalf("without ident, the name comes from the parent: %q", got)
	}
}
