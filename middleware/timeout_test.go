package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

func TestTimeoutSetsDeadline(t *testing.T) {
	var deadline time.Time
	h := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
		deadline, _ = ctx.Deadline()
		return nil
	})
	before := time.Now()
	require.NoError(t, middleware.Timeout(time.Minute)(h).Handle(mwCtx(), mwMsg("m")))
	require.False(t, deadline.IsZero())
	require.WithinRange(t, deadline, before.Add(time.Minute), time.Now().Add(time.Minute))
}

func TestTimeoutExpiredIsRetryable(t *testing.T) {
	for name, wrap := range map[string]func(error) error{
		"plain":       func(err error) error { return err },
		"wrapped":     func(err error) error { return fmt.Errorf("query: %w", err) },
		"unavailable": consumer.Unavailable, // a store blaming the dependency for our deadline
		"permanent":   consumer.Permanent,
	} {
		h := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
			<-ctx.Done()
			return wrap(ctx.Err())
		})
		err := middleware.Timeout(time.Millisecond)(h).Handle(mwCtx(), mwMsg("m"))
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.Equal(t, consumer.ClassRetryable, consumer.Classify(err), name)
		require.ErrorContains(t, err, "handler timed out after 1ms", name)
	}
}

func TestTimeoutPassesOtherResults(t *testing.T) {
	boom := errors.New("boom")
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return boom })
	require.Same(t, boom, middleware.Timeout(time.Minute)(h).Handle(mwCtx(), mwMsg("m")))

	// Success after the deadline is still success: the effect is done.
	late := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
		<-ctx.Done()
		return nil
	})
	require.NoError(t, middleware.Timeout(time.Millisecond)(late).Handle(mwCtx(), mwMsg("m")))

	// Cancellation of the parent (hard stop) is not reported as a timeout.
	ctx, cancel := context.WithCancel(mwCtx())
	cancel()
	stopped := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error { return ctx.Err() })
	err := middleware.Timeout(time.Minute)(stopped).Handle(ctx, mwMsg("m"))
	require.Same(t, context.Canceled, err)
}

func TestTimeoutRejectsNonPositive(t *testing.T) {
	require.Panics(t, func() { middleware.Timeout(0) })
	require.Panics(t, func() { middleware.Timeout(-time.Second) })
}

func ExampleTimeout() {
	slow := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		select {
		case <-time.After(time.Minute):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	err := consumer.Chain(slow, middleware.Timeout(10*time.Millisecond)).
		Handle(context.Background(), &consumer.Message{ID: "m-1", Attempt: 1})
	fmt.Println(err)
	fmt.Println("deadline exceeded:", errors.Is(err, context.DeadlineExceeded), "class:", consumer.Classify(err))
	// Output:
	// oncely: handler timed out after 10ms (handler error: context deadline exceeded): context deadline exceeded
	// deadline exceeded: true class: retryable
}

func TestTimeoutKeepsOutage(t *testing.T) {
	h := middleware.Timeout(10 * time.Millisecond)(consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
		<-ctx.Done()
		return consumer.Unavailable(errors.New("dial db: connection refused"))
	}))
	err := h.Handle(context.Background(), &consumer.Message{ID: "m1"})
	if got := consumer.Classify(err); got != consumer.ClassUnavailable {
		t.Fatalf("Classify = %v, want outage; err = %v", got, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v does not wrap DeadlineExceeded", err)
	}
}

// An outage past the deadline keeps the dependency it names, so the runtime
// still probes it instead of taking the failure's word for an outage.
func TestTimeoutKeepsOutageDependency(t *testing.T) {
	db := consumer.ProberFunc(func(context.Context) error { return nil })
	h := middleware.Timeout(10 * time.Millisecond)(consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
		<-ctx.Done()
		return consumer.UnavailableFrom(errors.New("commit: connection reset"), db)
	}))
	err := h.Handle(context.Background(), &consumer.Message{ID: "m1"})
	var ue *consumer.UnavailableError
	if !errors.As(err, &ue) || ue.Dependency == nil {
		t.Fatalf("err %v lost the dependency", err)
	}
	if ue.Dependency.Probe(context.Background()) != nil {
		t.Fatal("the kept dependency is not the handler's")
	}
}
