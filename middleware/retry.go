package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

type tryKey struct{}

// tryFromContext returns the in-process try number Retry put in ctx (1 for
// the first call), or 0 outside Retry.
func tryFromContext(ctx context.Context) int {
	n, _ := ctx.Value(tryKey{}).(int)
	return n
}

// Retry re-runs the wrapped handler in process, before the runtime's broker
// retry takes over. policy.MaxAttempts is the number of tries per delivery
// (the first included), and the waits between them follow the policy's
// exponential backoff with jitter. A zero policy gets retry's defaults
// (5 tries, 1s doubling): for in-process retry choose short intervals, such as
// retry.Policy{MaxAttempts: 3, InitialInterval: 50 * time.Millisecond,
// MaxInterval: time.Second}.
//
// Only retryable errors are retried (consumer.Classify): Permanent and
// Unavailable errors are returned at once. A consumer.RetryAfter error makes
// the next try wait at least its delay; when that delay exceeds the policy's
// MaxInterval the error is returned at once, leaving the long wait to the
// broker. Panics are recovered (consumer.Recover) and count as failed tries.
// When ctx is done, or its deadline would pass before the next try, Retry
// stops waiting. In every case it returns the last try's error unchanged, so
// the runtime's broker retry and dead-lettering decide what happens next.
//
// In-process retries run within the broker lease (Kafka poll interval, SQS
// visibility, AMQP consumer timeout): keep the policy's total wait well below
// it. They keep per-key order, since the delivery's lane waits for them; the
// broker retry does not. Put Idempotency inside Retry so each try claims in
// its own unit of work. Around a consumer.BatchHandler, Retry returns one
// that tries the whole batch again for a retryable error (before the runtime
// would bisect it) and returns a consumer.BatchError at once. Retry panics
// if policy is invalid.
func Retry(policy retry.Policy) consumer.Middleware {
	if err := policy.Validate(); err != nil {
		panic(fmt.Sprintf("middleware.Retry: %v", err))
	}
	p := policy.WithDefaults()
	return func(next consumer.Handler) consumer.Handler {
		next = consumer.Recover(next)
		if bnext, ok := next.(consumer.BatchHandler); ok {
			return &retryBatch{p: p, next: bnext}
		}
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			return retrying(ctx, p, func(ctx context.Context) error { return next.Handle(ctx, msg) })
		})
	}
}

// retryBatch is Retry around a BatchHandler: the whole batch is tried again
// for a retryable error (a serialization failure, a deadlock), before the
// runtime would bisect it. A BatchError is returned at once: the messages it
// names failed on their own, and the runtime settles them.
type retryBatch struct {
	p    retry.Policy
	next consumer.BatchHandler
}

func (h *retryBatch) Handle(ctx context.Context, msg *consumer.Message) error {
	return consumer.HandleOne(ctx, h, msg)
}

func (h *retryBatch) HandleBatch(ctx context.Context, msgs []*consumer.Message) error {
	return retrying(ctx, h.p, func(ctx context.Context) error { return h.next.HandleBatch(ctx, msgs) })
}

// retrying calls call until it succeeds or fails with an error Retry does
// not retry, waiting between tries as Retry documents.
func retrying(ctx context.Context, p retry.Policy, call func(context.Context) error) error {
	b := backoff.WithContext(p.BackOff(nil), ctx)
	for try := 1; ; try++ {
		err := call(context.WithValue(ctx, tryKey{}, try))
		if err == nil || consumer.Classify(err) != consumer.ClassRetryable {
			return err
		}
		if _, named := consumer.AsBatchError(err); named {
			return err
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop {
			return err
		}
		var ra *consumer.RetryAfterError
		if errors.As(err, &ra) {
			if ra.After > p.MaxInterval {
				return err
			}
			wait = max(wait, ra.After)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			return err
		}
		if !sleep(ctx, wait) {
			return err
		}
	}
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
