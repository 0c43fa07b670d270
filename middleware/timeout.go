package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Timeout gives each call of the wrapped handler a context that expires after
// d. When the handler returns an error after its deadline passed, Timeout
// returns an error that wraps context.DeadlineExceeded and quotes the
// handler's error. That error is retryable, except that a real outage stays an
// outage: when the handler's error classifies as consumer.ClassUnavailable and does not
// itself stem from the deadline (a store whose connection was refused or reset
// just before the deadline passed), the Unavailable marker is kept, with its
// Dependency, so the runtime probes that dependency and holds the delivery
// while it is down, instead of retrying a healthy message on the broker. An Unavailable error caused by the deadline
// (a store blaming the database for our own timeout) is retryable. A handler that finishes
// successfully after the deadline still succeeds.
//
// Timeout cannot stop a handler that ignores its context; it waits for the
// handler to return, so a delivery is never settled while its handler runs.
// Cancellation of the parent context (hard stop, lost lease) passes through
// unchanged. Around a consumer.BatchHandler, Timeout returns one: d bounds
// each batch call, and a batch that misses it fails as a whole, so the
// runtime bisects it down to the slow messages. Timeout panics if d is not
// positive.
func Timeout(d time.Duration) consumer.Middleware {
	if d <= 0 {
		panic(fmt.Sprintf("middleware.Timeout: duration must be positive, got %s", d))
	}
	return func(next consumer.Handler) consumer.Handler {
		if bnext, ok := next.(consumer.BatchHandler); ok {
			return &timeoutBatch{d: d, next: bnext}
		}
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			return withTimeout(ctx, d, func(ctx context.Context) error { return next.Handle(ctx, msg) })
		})
	}
}

// timeoutBatch is Timeout around a BatchHandler: the deadline is the whole
// batch's, and a batch that misses it fails as a whole (the runtime then
// bisects it, each half with a deadline of its own).
type timeoutBatch struct {
	d    time.Duration
	next consumer.BatchHandler
}

func (h *timeoutBatch) Handle(ctx context.Context, msg *consumer.Message) error {
	return consumer.HandleOne(ctx, h, msg)
}

func (h *timeoutBatch) HandleBatch(ctx context.Context, msgs []*consumer.Message) error {
	return withTimeout(ctx, h.d, func(ctx context.Context) error { return h.next.HandleBatch(ctx, msgs) })
}

// withTimeout runs call under a context that expires after d, and applies
// Timeout's rule to its error.
func withTimeout(ctx context.Context, d time.Duration, call func(context.Context) error) error {
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := call(tctx)
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		timedOut := fmt.Errorf("oncely: handler timed out after %s (handler error: %v): %w", d, err, context.DeadlineExceeded)
		var ue *consumer.UnavailableError
		if consumer.Classify(err) == consumer.ClassUnavailable && !errors.Is(err, context.DeadlineExceeded) && errors.As(err, &ue) {
			// Keep the dependency, so the runtime still probes it.
			if ue.Down {
				return consumer.DownFrom(timedOut, ue.Dependency)
			}
			return consumer.UnavailableFrom(timedOut, ue.Dependency)
		}
		return timedOut
	}
	return err
}
