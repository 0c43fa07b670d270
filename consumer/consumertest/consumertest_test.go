package consumertest_test

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
	"github.com/oncely/oncely/consumer/consumertest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB records what Run reports instead of failing the real test.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Context() context.Context { return context.Background() }
func (f *fakeTB) Error(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprint(args...))
}

// counter is a handler applying one effect per call.
type counter struct{ n atomic.Int64 }

func (c *counter) Handle(context.Context, *consumer.Message) error {
	c.n.Add(1)
	return nil
}
func (c *counter) count() int { return int(c.n.Load()) }

// idempotent builds the recommended chain: Idempotency on a fresh memory store.
func idempotent(t *testing.T) func(consumer.Middleware) (consumer.Handler, func() int) {
	return func(fault consumer.Middleware) (consumer.Handler, func() int) {
		s, err := memory.New(memory.Config{})
		require.NoError(t, err)
		c := &counter{}
		return consumer.Chain(c, middleware.Idempotency(s), fault), c.count
	}
}

// bare has no idempotency at all.
func bare(fault consumer.Middleware) (consumer.Handler, func() int) {
	c := &counter{}
	return consumer.Chain(c, fault), c.count
}

func TestIdempotentHandlerPasses(t *testing.T) {
	for _, n := range []int{2, 8, 32} {
		r := consumertest.Redelivery{Setup: idempotent(t), Concurrency: n}
		require.NoError(t, r.Check(context.Background(), consumertest.NewMessage("m-1", []byte("x"))), "concurrency %d", n)

		tb := &fakeTB{}
		r.Run(tb, consumertest.NewMessage("m-1", []byte("x")))
		require.Empty(t, tb.errors)
	}
}

func TestHandlerWithoutIdempotencyFails(t *testing.T) {
	r := consumertest.Redelivery{Setup: bare, Concurrency: 5}
	err := r.Check(context.Background(), consumertest.NewMessage("m-1", nil))
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "consumertest: redelivered: effect applied 2 times after the message was delivered twice, want 1")
	require.Contains(t, msg, "consumertest: concurrent: effect applied 5 times after 5 concurrent deliveries, want 1")
	require.Contains(t, msg, "consumertest: after failure: effect applied 2 times after a third delivery, want 1")

	tb := &fakeTB{}
	r.Run(tb, consumertest.NewMessage("m-1", nil))
	require.Len(t, tb.errors, 1)
	require.Equal(t, msg, tb.errors[0])
}

// TestClaimKeptOnFailureFails: a naive dedupe that records the ID before the
// handler runs and keeps it when the handler fails swallows the redelivery.
func TestClaimKeptOnFailureFails(t *testing.T) {
	setup := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		var seen sync.Map
		c := &counter{}
		dedupe := func(next consumer.Handler) consumer.Handler {
			return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
				if _, dup := seen.LoadOrStore(m.ID, true); dup {
					return nil
				}
				return next.Handle(ctx, m)
			})
		}
		return consumer.Chain(c, dedupe, fault), c.count
	}
	err := consumertest.Redelivery{Setup: setup}.Check(context.Background(), consumertest.NewMessage("m-1", nil))
	require.EqualError(t, err, "consumertest: after failure: effect applied 0 times after the redelivery that followed a failed attempt (did the failure leave a claim behind?), want 1")
}

// txStore is a store.Store whose Process stages effects in a unit of work and
// commits them with the claim, as store/postgres does with a transaction.
type txStore struct {
	mem       *memory.Store
	committed atomic.Int64
}

type txKey struct{}

func (s *txStore) Process(ctx context.Context, name, id string, fn func(context.Context) error) (bool, error) {
	var staged int64
	return s.mem.Process(ctx, name, id, func(ctx context.Context) error {
		if err := fn(context.WithValue(ctx, txKey{}, &staged)); err != nil {
			return err // rolled back: staged effects are dropped
		}
		s.committed.Add(staged)
		return nil
	})
}

var _ store.Store = (*txStore)(nil)

func TestFailAfterEffect(t *testing.T) {
	transactional := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		mem, err := memory.New(memory.Config{})
		require.NoError(t, err)
		s := &txStore{mem: mem}
		h := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
			*ctx.Value(txKey{}).(*int64) += 1
			return nil
		})
		return consumer.Chain(h, middleware.Idempotency(s), fault), func() int { return int(s.committed.Load()) }
	}
	msg := consumertest.NewMessage("m-1", nil)
	require.NoError(t, consumertest.Redelivery{Setup: transactional, FailAfterEffect: true}.Check(context.Background(), msg))

	// The memory store cannot undo the effect of a failed attempt.
	err := consumertest.Redelivery{Setup: idempotent(t), FailAfterEffect: true}.Check(context.Background(), msg)
	require.EqualError(t, err, "consumertest: failure after effect: effect applied 1 times after a failed attempt (its effect must not persist), want 0")
}

func TestMissingFaultIsReported(t *testing.T) {
	setup := func(consumer.Middleware) (consumer.Handler, func() int) {
		s, err := memory.New(memory.Config{})
		require.NoError(t, err)
		c := &counter{}
		return consumer.Chain(c, middleware.Idempotency(s)), c.count
	}
	err := consumertest.Redelivery{Setup: setup}.Check(context.Background(), consumertest.NewMessage("m-1", nil))
	require.ErrorContains(t, err, "consumertest: after failure: the fault middleware passed to Setup is not in the returned chain")
}

func TestSetupMustBeFresh(t *testing.T) {
	c := &counter{} // shared between scenarios: not reset
	s, err := memory.New(memory.Config{})
	require.NoError(t, err)
	setup := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		return consumer.Chain(c, middleware.Idempotency(s), fault), c.count
	}
	err = consumertest.Redelivery{Setup: setup}.Check(context.Background(), consumertest.NewMessage("m-1", nil))
	require.ErrorContains(t, err, "consumertest: concurrent: the Setup func must return fresh state, but effects() = 1 before any delivery")
}

func TestDuplicateMustBeAcked(t *testing.T) {
	// A handler that rejects the second copy (say, a unique-key violation
	// surfacing as an error) would send it to retry and the DLQ.
	setup := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		var seen sync.Map
		c := &counter{}
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if _, dup := seen.LoadOrStore(m.ID, true); dup {
				return errors.New("duplicate key value violates unique constraint")
			}
			return c.Handle(ctx, m)
		})
		return consumer.Chain(h, fault), c.count
	}
	err := consumertest.Redelivery{Setup: setup, Concurrency: 3}.Check(context.Background(), consumertest.NewMessage("m-1", nil))
	require.ErrorContains(t, err, "consumertest: redelivered: the second delivery returned duplicate key value violates unique constraint, want nil")
	require.ErrorContains(t, err, "consumertest: concurrent: copy")
}

func TestPanickingHandlerIsReported(t *testing.T) {
	setup := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { panic("boom") })
		return consumer.Chain(h, fault), func() int { return 0 }
	}
	err := consumertest.Redelivery{Setup: setup}.Check(context.Background(), consumertest.NewMessage("m-1", nil))
	require.ErrorContains(t, err, "consumertest: redelivered: the first delivery returned panic: boom, want nil")
}

func TestHungHandlerIsReported(t *testing.T) {
	release := make(chan struct{})
	setup := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { <-release; return nil })
		return consumer.Chain(h, fault), func() int { return 0 }
	}
	err := consumertest.Redelivery{Setup: setup, Concurrency: 2, Timeout: 20 * time.Millisecond}.Check(context.Background(), consumertest.NewMessage("m-1", nil))
	close(release)
	require.ErrorContains(t, err, "consumertest: redelivered: deliveries still running")
	require.ErrorContains(t, err, "does the handler honour its context?")
}

func TestAttemptsIncreasePerDelivery(t *testing.T) {
	var mu sync.Mutex
	var attempts []int
	setup := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		mu.Lock()
		attempts = nil
		mu.Unlock()
		s, err := memory.New(memory.Config{})
		require.NoError(t, err)
		record := func(next consumer.Handler) consumer.Handler {
			return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
				mu.Lock()
				attempts = append(attempts, m.Attempt)
				mu.Unlock()
				if consumer.NameFromContext(ctx) != consumertest.ConsumerDefault {
					return errors.New("no consumer name in the context")
				}
				return next.Handle(ctx, m)
			})
		}
		c := &counter{}
		// record sits outside Idempotency, so it sees every delivery that
		// got past the fault.
		return consumer.Chain(c, fault, record, middleware.Idempotency(s)), c.count
	}
	require.NoError(t, consumertest.Redelivery{Setup: setup}.Check(context.Background(), consumertest.NewMessage("m-1", nil)))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{2, 3}, attempts, "after failure: attempt 1 failed in the fault, then attempts 2 and 3")
}

func TestCheckValidates(t *testing.T) {
	msg := consumertest.NewMessage("m", nil)
	require.EqualError(t, consumertest.Redelivery{}.Check(context.Background(), msg), "consumertest: Redelivery.Setup is required")
	require.EqualError(t, consumertest.Redelivery{Setup: bare}.Check(context.Background(), nil), "consumertest: nil message")
	require.EqualError(t, consumertest.Redelivery{Setup: bare, Concurrency: 1}.Check(context.Background(), msg), "consumertest: Concurrency must be >= 2, got 1")
	nilSetup := func(consumer.Middleware) (consumer.Handler, func() int) { return nil, nil }
	require.EqualError(t, consumertest.Redelivery{Setup: nilSetup}.Check(context.Background(), msg), "consumertest: Setup returned a nil handler or effects func")
}

func TestNewMessage(t *testing.T) {
	m := consumertest.NewMessage("id-1", []byte("body"))
	require.Equal(t, "id-1", m.ID)
	require.Equal(t, []byte("body"), m.Body)
	require.Equal(t, 1, m.Attempt)
	require.Equal(t, int32(-1), m.Partition)
	require.Equal(t, int64(-1), m.Offset)
	require.Equal(t, "id-1", m.Header(consumer.HeaderMessageID))
	require.NotEmpty(t, m.Source)
	require.False(t, m.Timestamp.IsZero())
	require.True(t, strings.HasPrefix(m.Source, "consumertest"))
}

func TestAttemptContext(t *testing.T) {
	ctx := consumertest.AttemptContext(context.Background(), "ledger")
	require.Equal(t, "ledger", consumer.NameFromContext(ctx))
	consumer.MarkDuplicate(ctx)
	require.True(t, consumer.IsDuplicate(ctx))
}

func ExampleRedelivery() {
	// The handler under test credits an account; Idempotency keeps it from
	// crediting twice.
	setup := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		claims, err := memory.New(memory.Config{}) // fresh for every scenario
		if err != nil {
			panic(err)
		}
		var credits atomic.Int64
		credit := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			credits.Add(1)
			return nil
		})
		h := consumer.Chain(credit, middleware.Idempotency(claims), fault)
		return h, func() int { return int(credits.Load()) }
	}
	msg := consumertest.NewMessage("payment-1", []byte(`{"amount":10}`))

	// In a test: consumertest.Redelivery{Setup: setup}.Run(t, msg)
	fmt.Println("with idempotency:", consumertest.Redelivery{Setup: setup}.Check(context.Background(), msg))

	withoutIdempotency := func(fault consumer.Middleware) (consumer.Handler, func() int) {
		var credits atomic.Int64
		credit := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			credits.Add(1)
			return nil
		})
		return consumer.Chain(credit, fault), func() int { return int(credits.Load()) }
	}
	fmt.Println("without:")
	fmt.Println(consumertest.Redelivery{Setup: withoutIdempotency, Concurrency: 4}.Check(context.Background(), msg))
	// Output:
	// with idempotency: <nil>
	// without:
	// consumertest: redelivered: effect applied 2 times after the message was delivered twice, want 1
	// consumertest: concurrent: effect applied 4 times after 4 concurrent deliveries, want 1
	// consumertest: after failure: effect applied 2 times after a third delivery, want 1
}
