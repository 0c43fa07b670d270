package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// crash stops s as a killed process would: no ack written, nothing
// released, its consumer left in the group holding what it took, its
// heartbeat left to expire.
func (s *Source) crash() {
	s.mu.Lock()
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	s.receivers.Wait()
	s.leases.stop()
	s.live.halt()
	a := s.acks
	a.mu.Lock()
	a.stopped = true
	close(a.stopc)
	a.queue = nil
	a.mu.Unlock()
	<-a.exited
}

// pendingMessages is the size of TestPendingBounded (ONCELY_PENDING_MESSAGES
// overrides it).
func pendingMessages() int {
	if n, err := strconv.Atoi(os.Getenv("ONCELY_PENDING_MESSAGES")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// TestPendingBounded: 100,000 entries consumed by the runtime while ten
// Sources take 50 entries each and crash, with retried and dead-lettered
// messages, and 10 taken entries deleted from the stream (ghosts). Every
// message is settled (processed or dead-lettered once it exists), and
// afterwards nothing is pending that is not in flight: while the consumer
// still runs, at most MaxInFlight entries are pending and the crashed
// consumers, emptied by the reclaim, are deleted; once it stopped, nothing
// is pending, the retry stream and delayed set are empty, and the live
// consumer is gone too. Catches a pending list that grows (crashed
// entries never reclaimed, ghosts redelivered or left pending forever,
// retry copies never acked, dead consumers never deleted).
func TestPendingBounded(t *testing.T) {
	n := pendingMessages()
	const crashes, taken, ghosts, inFlight = 10, 50, 10, 128
	client := newClient(t)
	stream := adaptertest.SourceName("pending")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		publish(t, client, stream, testMessages(fmt.Sprintf("p%06d", i), min(1000, n-i))...)
	}
	cfg := Config{Stream: stream, Consumer: "ledger", Lease: time.Second, ReclaimInterval: 100 * time.Millisecond, ReapIdle: time.Second}
	t.Cleanup(func() {
		_ = client.Del(context.Background(), stream, RetryStream(stream, "ledger"), DelayedKey(stream, "ledger"), DeadLetterStream(stream, "ledger")).Err()
	})

	// The crashed Sources take their entries before the consumer starts,
	// so the reclaim, not the order of reads, decides who gets them.
	var crashed []string
	var sources []*Source
	deleted := map[string]bool{}
	for i := range crashes {
		src := newSource(t, client, cfg)
		ds := adaptertest.ReceiveN(t, src, taken, 10*time.Second)
		if i == 0 {
			for _, d := range ds[:ghosts] {
				m := d.Message()
				deleted[m.ID] = true
				if err := client.XDel(ctx, stream, m.Coordinates[CoordinateEntryID]).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		src.crash()
		crashed = append(crashed, src.name)
		sources = append(sources, src)
	}

	fails := func(id string) (retryable, permanent bool) {
		h := 0
		for _, c := range id {
			h = h*31 + int(c)
		}
		return h%97 == 0, h%1009 == 0
	}
	var mu sync.Mutex
	final := map[string]consumer.Outcome{}
	var wantDead int
	for i := 0; i < n; i += 1000 {
		for _, m := range testMessages(fmt.Sprintf("p%06d", i), min(1000, n-i)) {
			if _, perm := fails(m.ID); perm && !deleted[m.ID] {
				wantDead++
			}
		}
	}
	want := n - ghosts
	done := make(chan struct{})
	obs := settledObserver(func(ev consumer.Event) {
		if ev.Outcome != consumer.OutcomeProcessed && ev.Outcome != consumer.OutcomeDeadLettered {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		final[ev.Message.ID] = ev.Outcome
		if len(final) == want {
			close(done)
		}
	})
	live := newSource(t, client, cfg)
	c, err := consumer.New(live, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		retryable, perm := fails(m.ID)
		switch {
		case perm:
			return consumer.Permanent(errors.New("poison"))
		case retryable && m.Attempt == 1:
			return errors.New("try again")
		}
		return nil
	}), consumer.Config{
		Name: "ledger", Concurrency: 16, MaxInFlight: inFlight, Observer: obs, Logger: quietLogger(),
		Duplicates: consumer.AllowDuplicates("test: counts settlements, no effects"),
		Retry:      retry.Policy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond, MaxInterval: 10 * time.Millisecond, Jitter: retry.NoJitter},
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	select {
	case <-done:
	case err := <-ran:
		t.Fatalf("consumer stopped early: %v", err)
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("only %d of %d messages settled for good", len(final), want)
	}
	t.Logf("%d entries settled %s after the start", want, time.Since(start).Round(time.Millisecond))

	// Running: what is pending is in flight, and the crashed consumers,
	// emptied, are deleted.
	if p := pendingCount(t, client, stream, "ledger"); p > inFlight {
		t.Errorf("%d entries pending with the consumer running, more than MaxInFlight (%d)", p, inFlight)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		names := consumerNames(t, client, stream, "ledger")
		left := slices.DeleteFunc(slices.Clone(crashed), func(n string) bool { return !slices.Contains(names, n) })
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crashed consumers %v still in the group 10s after the run (consumers %v)", left, names)
		}
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}

	// Stopped: nothing pending anywhere, nothing waiting to be retried.
	for _, s := range []string{stream, RetryStream(stream, "ledger")} {
		if p := pendingCount(t, client, s, "ledger"); p != 0 {
			t.Errorf("%d entries of %s pending after the stop, want 0", p, s)
		}
	}
	if l := client.XLen(ctx, RetryStream(stream, "ledger")).Val(); l != 0 {
		t.Errorf("%d entries left in the retry stream, want 0 (settled copies are deleted)", l)
	}
	if z := client.ZCard(ctx, DelayedKey(stream, "ledger")).Val(); z != 0 {
		t.Errorf("%d retries still delayed, want 0", z)
	}
	if names := consumerNames(t, client, stream, "ledger"); len(names) != 0 {
		t.Errorf("consumers %v left after the stop, want none", names)
	}
	mu.Lock()
	defer mu.Unlock()
	var dead int
	for id, o := range final {
		if deleted[id] {
			t.Errorf("%s was deleted from the stream and still delivered", id)
		}
		if o == consumer.OutcomeDeadLettered {
			dead++
		}
	}
	if l := client.XLen(ctx, DeadLetterStream(stream, "ledger")).Val(); dead != wantDead || l != int64(wantDead) {
		t.Errorf("%d dead-lettered, %d in the dead-letter stream, want %d", dead, l, wantDead)
	}
	// Any Source's reclaim may find the ghosts (XAUTOCLAIM drops deleted
	// entries whatever their idle time): count them over all.
	var found int64
	for _, src := range append(sources, live) {
		found += src.Stats().Ghosts
	}
	if st := live.Stats(); found != ghosts || st.Reclaimed != crashes*taken-ghosts {
		t.Errorf("%d ghosts found, the live Source's Stats %+v; want %d ghosts and %d reclaimed", found, st, ghosts, crashes*taken-ghosts)
	}
}

type settledObserver func(consumer.Event)

func (f settledObserver) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (settledObserver) BreakerChanged(bool)                            {}
