package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/memory"
)

func mwStore(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New(memory.Config{})
	require.NoError(t, err)
	return s
}

func TestIdempotencyRunsOnceAndMarksDuplicate(t *testing.T) {
	s := mwStore(t)
	var n atomic.Int32
	h := middleware.Idempotency(s)(consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		n.Add(1)
		return nil
	}))
	ctx1 := mwCtx()
	require.NoError(t, h.Handle(ctx1, mwMsg("m")))
	require.False(t, consumer.IsDuplicate(ctx1))
	ctx2 := mwCtx()
	require.NoError(t, h.Handle(ctx2, mwMsg("m")))
	require.True(t, consumer.IsDuplicate(ctx2), "the runtime must count a duplicate")
	require.Equal(t, int32(1), n.Load())
	require.True(t, s.Claimed("ledger", "m"))

	// Claims are keyed by consumer name too.
	ctx3 := consumer.WithAttemptState(consumer.WithName(context.Background(), "audit"))
	require.NoError(t, h.Handle(ctx3, mwMsg("m")))
	require.False(t, consumer.IsDuplicate(ctx3))
	require.Equal(t, int32(2), n.Load())
}

func TestIdempotencyConcurrentDeliveriesRunOnce(t *testing.T) {
	s := mwStore(t)
	var n atomic.Int32
	h := middleware.Idempotency(s)(consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		n.Add(1)
		return nil
	}))
	const copies = 16
	var wg sync.WaitGroup
	var dups atomic.Int32
	start := make(chan struct{})
	for range copies {
		wg.Go(func() {
			<-start
			ctx := mwCtx()
			if err := h.Handle(ctx, mwMsg("m")); err != nil {
				t.Error(err)
			}
			if consumer.IsDuplicate(ctx) {
				dups.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Equal(t, int32(1), n.Load())
	require.Equal(t, int32(copies-1), dups.Load())
}

func TestIdempotencyFailureReleasesClaim(t *testing.T) {
	s := mwStore(t)
	boom := errors.New("boom")
	fail := true
	h := middleware.Idempotency(s)(consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		if fail {
			return boom
		}
		return nil
	}))
	ctx := mwCtx()
	require.Same(t, boom, h.Handle(ctx, mwMsg("m")), "the handler's error, unchanged")
	require.False(t, consumer.IsDuplicate(ctx))
	require.False(t, s.Claimed("ledger", "m"))
	fail = false
	ctx = mwCtx()
	require.NoError(t, h.Handle(ctx, mwMsg("m")))
	require.False(t, consumer.IsDuplicate(ctx), "the retry runs the handler")
	require.True(t, s.Claimed("ledger", "m"))
}

// failingStore fails every Process with err.
type failingStore struct{ err error }

func (f failingStore) Process(context.Context, string, string, func(context.Context) error) (bool, error) {
	return false, f.err
}

// A store failure reaches the runtime as the store wrapped it: the
// Dependency it names is kept, so the runtime can probe it.
func TestIdempotencyKeepsTheStoresDependency(t *testing.T) {
	dep := consumer.ProberFunc(func(context.Context) error { return nil })
	storeErr := consumer.UnavailableFrom(errors.New("connection reset"), dep)
	h := middleware.Idempotency(failingStore{storeErr})(consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		return errors.New("handler must not run")
	}))
	err := h.Handle(mwCtx(), mwMsg("m"))
	require.Same(t, storeErr, err)
	var ue *consumer.UnavailableError
	require.ErrorAs(t, err, &ue)
	require.NotNil(t, ue.Dependency)
	require.NoError(t, ue.Dependency.Probe(context.Background()))
}

func TestIdempotencyNeedsNameAndID(t *testing.T) {
	s := mwStore(t)
	h := middleware.Idempotency(s)(consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		return errors.New("handler must not run")
	}))
	err := h.Handle(consumer.WithAttemptState(context.Background()), mwMsg("m"))
	require.ErrorIs(t, err, middleware.ErrNoConsumerName)

	err = h.Handle(mwCtx(), mwMsg(""))
	require.ErrorIs(t, err, middleware.ErrNoMessageID)
	require.Equal(t, consumer.ClassPermanent, consumer.Classify(err))
	require.Zero(t, s.Len())

	require.Panics(t, func() { middleware.Idempotency(nil) })
}

// TestIdempotencyInsideRetry: each in-process try claims anew, so a failed
// try does not make the next one a duplicate.
func TestIdempotencyInsideRetry(t *testing.T) {
	s := mwStore(t)
	h := &mwScript{results: []any{errors.New("1"), "2", nil}}
	chain := consumer.Chain(h, middleware.Retry(fastPolicy(5)), middleware.Idempotency(s))
	ctx := mwCtx()
	require.NoError(t, chain.Handle(ctx, mwMsg("m")))
	require.Equal(t, 3, h.count())
	require.False(t, consumer.IsDuplicate(ctx))
	require.True(t, s.Claimed("ledger", "m"))
}

func ExampleIdempotency() {
	claims, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	balance := 0
	credit := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		balance += 10
		return nil
	})
	h := consumer.Chain(credit, middleware.Idempotency(claims))
	msg := &consumer.Message{ID: "payment-42", Attempt: 1}
	for delivery := 1; delivery <= 3; delivery++ {
		// The runtime gives every attempt this context; tests build it directly.
		ctx := consumer.WithAttemptState(consumer.WithName(context.Background(), "ledger"))
		err := h.Handle(ctx, msg)
		fmt.Printf("delivery %d: err=%v duplicate=%v balance=%d\n", delivery, err, consumer.IsDuplicate(ctx), balance)
	}
	// Output:
	// delivery 1: err=<nil> duplicate=false balance=10
	// delivery 2: err=<nil> duplicate=true balance=10
	// delivery 3: err=<nil> duplicate=true balance=10
}
