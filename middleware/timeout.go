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
// handler's error. That error is retryable whatever class the handler's own
// error had: the deadline, not the message or a dependency, ended the attempt.
// A handler that finishes successfully after the deadline still succeeds.
//
// Timeout cannot stop a handler that ignores its context; it waits for the
// handler to return, so a delivery is never settled while its handler runs.
// Cancellation of the parent context (hard stop, lost lease) passes through
// unchanged. Timeout panics if d is not positive.
func Timeout(d time.Duration) consumer.Middleware {
	if d <= 0 {
		panic(fmt.Sprintf("middleware.Timeout: duration must be positive, got %s", d))
	}
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			tctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			err := next.Handle(tctx, msg)
			if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("oncely: handler timed out after %s (handler error: %v): %w", d, err, context.DeadlineExceeded)
			}
			return err
		})
	}
}
