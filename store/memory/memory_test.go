package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newStore(t *testing.T, cfg memory.Config) *memory.Store {
	t.Helper()
	s, err := memory.New(cfg)
	require.NoError(t, err)
	return s
}

func TestProcessCommitsThenDuplicate(t *testing.T) {
	s := newStore(t, memory.Config{})
	ctx := context.Background()
	calls := 0
	fn := func(context.Context) error { calls++; return nil }

	dup, err := s.Process(ctx, "ledger", "m1", fn)
	require.NoError(t, err)
	require.False(t, dup)
	require.True(t, s.Claimed("ledger", "m1"))

	dup, err = s.Process(ctx, "ledger", "m1", fn)
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, 1, calls)

	// Claims are per consumer: another consumer of the same stream runs fn.
	dup, err = s.Process(ctx, "audit", "m1", fn)
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, 2, calls)
	require.Equal(t, 2, s.Len())
}

func TestProcessConcurrentRunsOnce(t *testing.T) {
	for _, n := range []int{2, 8, 32} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := newStore(t, memory.Config{})
			var calls, inside atomic.Int32
			entered := make(chan struct{})
			release := make(chan struct{})
			fn := func(context.Context) error {
				if inside.Add(1) != 1 {
					return errors.New("two calls of fn overlapped")
				}
				defer inside.Add(-1)
				if calls.Add(1) == 1 {
					close(entered)
					<-release // hold the claim until every caller is waiting on it
				}
				return nil
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			dups := make([]bool, n)
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					<-start
					dups[i], errs[i] = s.Process(context.Background(), "c", "same", fn)
				})
			}
			close(start)
			<-entered
			close(release)
			wg.Wait()
			ndup := 0
			for i := range n {
				require.NoError(t, errs[i])
				if dups[i] {
					ndup++
				}
			}
			require.Equal(t, int32(1), calls.Load(), "fn must run once")
			require.Equal(t, n-1, ndup, "every other caller sees a duplicate")
		})
	}
}

// TestProcessWaiterBlocksUntilFirstEnds checks that a concurrent Process does
// not return before the first one has ended, and then reports a duplicate.
func TestProcessWaiterBlocksUntilFirstEnds(t *testing.T) {
	s := newStore(t, memory.Config{})
	entered, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = s.Process(context.Background(), "c", "m", func(context.Context) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	type result struct {
		dup bool
		err error
	}
	second := make(chan result, 1)
	go func() {
		dup, err := s.Process(context.Background(), "c", "m", func(context.Context) error {
			return errors.New("fn must not run for a duplicate")
		})
		second <- result{dup, err}
	}()
	select {
	case r := <-second:
		t.Fatalf("second Process returned %+v while the first still held the claim", r)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	r := <-second
	require.NoError(t, r.err)
	require.True(t, r.dup)
}

func TestProcessFailureReleasesClaim(t *testing.T) {
	s := newStore(t, memory.Config{})
	boom := errors.New("boom")
	dup, err := s.Process(context.Background(), "c", "m", func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Same(t, boom, err, "fn's error is returned unchanged")
	require.False(t, dup)
	require.False(t, s.Claimed("c", "m"))

	ran := false
	dup, err = s.Process(context.Background(), "c", "m", func(context.Context) error { ran = true; return nil })
	require.NoError(t, err)
	require.False(t, dup)
	require.True(t, ran, "a retry after a failure runs fn")
}

// TestProcessWaiterClaimsAfterFailure: when the first holder fails, a waiting
// Process takes the claim and runs fn itself.
func TestProcessWaiterClaimsAfterFailure(t *testing.T) {
	s := newStore(t, memory.Config{})
	entered, release := make(chan struct{}), make(chan struct{})
	firstErr := make(chan error, 1)
	go func() {
		_, err := s.Process(context.Background(), "c", "m", func(context.Context) error {
			close(entered)
			<-release
			return errors.New("first attempt fails")
		})
		firstErr <- err
	}()
	<-entered
	secondDone := make(chan bool, 1)
	var ran atomic.Bool
	go func() {
		dup, err := s.Process(context.Background(), "c", "m", func(context.Context) error { ran.Store(true); return nil })
		if err != nil {
			dup = true // reported below as a failure
		}
		secondDone <- dup
	}()
	close(release)
	require.Error(t, <-firstErr)
	require.False(t, <-secondDone)
	require.True(t, ran.Load())
	require.True(t, s.Claimed("c", "m"))
}

func TestProcessPanicReleasesClaim(t *testing.T) {
	s := newStore(t, memory.Config{})
	func() {
		defer func() { require.Equal(t, "kaboom", recover()) }()
		_, _ = s.Process(context.Background(), "c", "m", func(context.Context) error { panic("kaboom") })
	}()
	require.False(t, s.Claimed("c", "m"))
	dup, err := s.Process(context.Background(), "c", "m", func(context.Context) error { return nil })
	require.NoError(t, err)
	require.False(t, dup)
}

func TestProcessContextCancelledWhileWaiting(t *testing.T) {
	s := newStore(t, memory.Config{})
	entered, release := make(chan struct{}), make(chan struct{})
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		_, _ = s.Process(context.Background(), "c", "m", func(context.Context) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	go func() {
		_, err := s.Process(ctx, "c", "m", func(context.Context) error {
			return errors.New("fn must not run")
		})
		waiting <- err
	}()
	cancel()
	err := <-waiting
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err))
	close(release)
	<-firstDone
	require.True(t, s.Claimed("c", "m"), "the first holder still commits")
}

func TestProcessContextDoneBeforeClaim(t *testing.T) {
	s := newStore(t, memory.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dup, err := s.Process(ctx, "c", "m", func(context.Context) error { return errors.New("fn must not run") })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, dup)
	require.False(t, s.Claimed("c", "m"))
}

func TestProcessRejectsBadKeys(t *testing.T) {
	s := newStore(t, memory.Config{})
	fn := func(context.Context) error { return errors.New("fn must not run") }
	for name, k := range map[string][2]string{
		"no consumer": {"", "m"},
		"no id":       {"c", ""},
		"long id":     {"c", strings.Repeat("x", store.MaxMessageIDLength+1)},
	} {
		_, err := s.Process(context.Background(), k[0], k[1], fn)
		require.Error(t, err, name)
		require.Equal(t, consumer.ClassPermanent, consumer.Classify(err), name)
	}
	_, err := s.Process(context.Background(), "c", strings.Repeat("x", store.MaxMessageIDLength), func(context.Context) error { return nil })
	require.NoError(t, err, "an ID of exactly the limit is accepted")
}

func TestRetentionAndPrune(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := newStore(t, memory.Config{Retention: time.Hour, Now: clock})
	ok := func(context.Context) error { return nil }

	_, err := s.Process(context.Background(), "c", "old", ok)
	require.NoError(t, err)
	advance(30 * time.Minute)
	_, err = s.Process(context.Background(), "c", "new", ok)
	require.NoError(t, err)
	require.Equal(t, 0, s.Prune(), "nothing is older than the window yet")

	advance(30 * time.Minute)
	require.False(t, s.Claimed("c", "old"), "an expired claim is not a claim")
	require.True(t, s.Claimed("c", "new"))
	require.Equal(t, 1, s.Prune())
	require.Equal(t, 1, s.Len())

	// A claim still being processed is never pruned.
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Process(context.Background(), "c", "busy", func(context.Context) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	advance(2 * time.Hour)
	require.Equal(t, 1, s.Prune(), "only the committed 'new' claim goes")
	close(release)
	<-done
	require.True(t, s.Claimed("c", "busy"))

	// An expired claim lets a redelivery run fn again (without Prune).
	advance(2 * time.Hour)
	dup, err := s.Process(context.Background(), "c", "busy", ok)
	require.NoError(t, err)
	require.False(t, dup)
}

func TestRetentionZeroKeepsForever(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore(t, memory.Config{Now: func() time.Time { return now }})
	_, err := s.Process(context.Background(), "c", "m", func(context.Context) error { return nil })
	require.NoError(t, err)
	now = now.Add(1000 * time.Hour)
	require.Equal(t, 0, s.Prune())
	require.True(t, s.Claimed("c", "m"))
}

func TestNewValidates(t *testing.T) {
	_, err := memory.New(memory.Config{Retention: -time.Second})
	require.EqualError(t, err, "memory store: invalid config: Config.Retention must be >= 0 (0 keeps claims forever), got -1s")
}

func ExampleStore_Process() {
	s, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	apply := func(context.Context) error { fmt.Println("effect applied"); return nil }
	for range 2 {
		dup, err := s.Process(context.Background(), "ledger", "payment-1", apply)
		fmt.Println("duplicate:", dup, "error:", err)
	}
	// Output:
	// effect applied
	// duplicate: false error: <nil>
	// duplicate: true error: <nil>
}

func TestProbe(t *testing.T) {
	s, err := memory.New(memory.Config{})
	require.NoError(t, err)
	var p consumer.Prober = s
	require.NoError(t, p.Probe(context.Background()), "the memory store is always up")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, p.Probe(ctx), context.Canceled, "Probe honours ctx")
}
