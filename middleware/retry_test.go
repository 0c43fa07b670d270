package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
)

// mwCtx is the context the runtime gives an attempt.
func mwCtx() context.Context {
	return consumer.WithAttemptState(consumer.WithName(context.Background(), "ledger"))
}

func mwMsg(id string) *consumer.Message {
	return &consumer.Message{ID: id, Source: "payments", Attempt: 1, Partition: -1, Offset: -1}
}

// mwScript is a handler that returns its results in turn (a nil entry
// succeeds; a "panic" string panics) and records when each call started.
type mwScript struct {
	mu      sync.Mutex
	results []any
	calls   []time.Time
}

func (s *mwScript) Handle(ctx context.Context, _ *consumer.Message) error {
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, time.Now())
	var r any
	if n < len(s.results) {
		r = s.results[n]
	} else if len(s.results) > 0 {
		r = s.results[len(s.results)-1]
	}
	s.mu.Unlock()
	switch r := r.(type) {
	case nil:
		return nil
	case error:
		return r
	case string:
		panic(r)
	}
	return fmt.Errorf("bad script entry %v", r)
}

func (s *mwScript) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func fastPolicy(attempts int) retry.Policy {
	return retry.Policy{MaxAttempts: attempts, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond}
}

func TestRetryUntilSuccess(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := &mwScript{results: []any{errors.New("1"), errors.New("2"), nil}}
	err := middleware.Retry(fastPolicy(5))(h).Handle(mwCtx(), mwMsg("m"))
	require.NoError(t, err)
	require.Equal(t, 3, h.count())
}

func TestRetryExhaustedReturnsLastError(t *testing.T) {
	first, second, last := errors.New("first"), errors.New("second"), errors.New("last")
	h := &mwScript{results: []any{first, second, last}}
	err := middleware.Retry(fastPolicy(3))(h).Handle(mwCtx(), mwMsg("m"))
	require.Same(t, last, err, "the last try's error, unchanged")
	require.Equal(t, 3, h.count(), "MaxAttempts tries in all")
}

func TestRetryStopsOnPermanentAndOutage(t *testing.T) {
	for name, e := range map[string]error{
		"permanent":   consumer.Permanent(errors.New("bad payload")),
		"unavailable": consumer.Unavailable(errors.New("db down")),
		"wrapped":     fmt.Errorf("decode: %w", consumer.Permanent(errors.New("bad"))),
	} {
		h := &mwScript{results: []any{e, nil}}
		err := middleware.Retry(fastPolicy(5))(h).Handle(mwCtx(), mwMsg("m"))
		require.Same(t, e, err, name)
		require.Equal(t, 1, h.count(), "%s: returned at once", name)
	}
}

func TestRetryPanicCountsAsFailedTry(t *testing.T) {
	h := &mwScript{results: []any{"kaboom", nil}}
	require.NoError(t, middleware.Retry(fastPolicy(3))(h).Handle(mwCtx(), mwMsg("m")))
	require.Equal(t, 2, h.count())

	always := &mwScript{results: []any{"kaboom"}}
	err := middleware.Retry(fastPolicy(3))(always).Handle(mwCtx(), mwMsg("m"))
	var pe *consumer.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "kaboom", pe.Value)
	require.NotEmpty(t, pe.Stack)
	require.Equal(t, 3, always.count())
}

func TestRetryBacksOffBetweenTries(t *testing.T) {
	p := retry.Policy{MaxAttempts: 4, InitialInterval: 4 * time.Millisecond, MaxInterval: time.Second, Jitter: retry.NoJitter}
	h := &mwScript{results: []any{errors.New("x")}}
	_ = middleware.Retry(p)(h).Handle(mwCtx(), mwMsg("m"))
	require.Equal(t, 4, h.count())
	for i, min := range []time.Duration{4 * time.Millisecond, 8 * time.Millisecond, 16 * time.Millisecond} {
		gap := h.calls[i+1].Sub(h.calls[i])
		require.GreaterOrEqual(t, gap, min, "wait before try %d", i+2)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Second}
	h := &mwScript{results: []any{consumer.RetryAfter(errors.New("rate limited"), 30*time.Millisecond), nil}}
	require.NoError(t, middleware.Retry(p)(h).Handle(mwCtx(), mwMsg("m")))
	require.Equal(t, 2, h.count())
	require.GreaterOrEqual(t, h.calls[1].Sub(h.calls[0]), 30*time.Millisecond)

	// A RetryAfter beyond MaxInterval is left to the broker retry.
	long := consumer.RetryAfter(errors.New("come back tomorrow"), 24*time.Hour)
	h = &mwScript{results: []any{long, nil}}
	err := middleware.Retry(p)(h).Handle(mwCtx(), mwMsg("m"))
	require.Same(t, long, err)
	require.Equal(t, 1, h.count())
}

func TestRetryStopsWhenContextDone(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := retry.Policy{MaxAttempts: 5, InitialInterval: time.Hour, MaxInterval: time.Hour}
	ctx, cancel := context.WithCancel(mwCtx())
	boom := errors.New("boom")
	called := make(chan struct{}, 5)
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		called <- struct{}{}
		return boom
	})
	done := make(chan error, 1)
	go func() { done <- middleware.Retry(p)(h).Handle(ctx, mwMsg("m")) }()
	<-called
	cancel()
	require.Same(t, boom, <-done, "the handler's error, not the context's")
	require.Len(t, called, 0, "no further try after cancellation")
}

func TestRetryDoesNotWaitPastDeadline(t *testing.T) {
	p := retry.Policy{MaxAttempts: 5, InitialInterval: time.Hour, MaxInterval: time.Hour}
	ctx, cancel := context.WithTimeout(mwCtx(), time.Minute)
	defer cancel()
	h := &mwScript{results: []any{errors.New("x")}}
	err := middleware.Retry(p)(h).Handle(ctx, mwMsg("m"))
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "returned before the deadline instead of sleeping into it")
	require.Equal(t, 1, h.count())
}

func TestRetryRejectsInvalidPolicy(t *testing.T) {
	require.PanicsWithValue(t, "middleware.Retry: retry: MaxAttempts must be >= 1, got -1",
		func() { middleware.Retry(retry.Policy{MaxAttempts: -1}) })
}

func ExampleRetry() {
	tries := 0
	flaky := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		tries++
		if tries < 3 {
			return errors.New("connection reset")
		}
		fmt.Printf("processed %s on try %d\n", msg.ID, tries)
		return nil
	})
	h := consumer.Chain(flaky, middleware.Retry(retry.Policy{
		MaxAttempts:     3,
		InitialInterval: time.Millisecond,
		MaxInterval:     10 * time.Millisecond,
	}))
	err := h.Handle(context.Background(), &consumer.Message{ID: "order-1", Attempt: 1})
	fmt.Println("error:", err)

	// Permanent errors are not retried in process.
	tries = 0
	bad := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		tries++
		return consumer.Permanent(errors.New("invalid JSON"))
	})
	err = consumer.Chain(bad, middleware.Retry(retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond})).
		Handle(context.Background(), &consumer.Message{ID: "order-2", Attempt: 1})
	fmt.Println("tries:", tries, "error:", err)
	// Output:
	// processed order-1 on try 3
	// error: <nil>
	// tries: 1 error: permanent: invalid JSON
}
