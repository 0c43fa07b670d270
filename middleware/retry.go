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
// its own unit of work.
//
// Around a consumer.BatchHandler, Retry returns one that tries the whole
// batch again for a retryable error, before the runtime would bisect it, and
// for a consumer.BatchError whose named errors are all retryable (waiting at
// least the longest RetryAfter among them): the named messages then keep
// their place in their keys' order as a single message's retries do, since
// the batch's later messages of their keys run only with them. A BatchError
// naming a Permanent or Unavailable error is returned at once: the runtime
// settles the named messages on their own (a broker retry, which gives up
// their place in their keys' order unless the broker retries in place) and
// runs the others again. Retry panics if policy is invalid.
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
// runtime would bisect it, and for a BatchError naming only retryable
// errors. A BatchError naming another error is returned at once: the
// runtime settles the messages it names.
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
		after, ok := retryAfter(err)
		if !ok || after > p.MaxInterval {
			return err
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop {
			return err
		}
		wait = max(wait, after)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			return err
		}
		if !sleep(ctx, wait) {
			return err
		}
	}
}

// retryAfter reports whether Retry tries again after err, a retryable
// error, and the least wait its consumer.RetryAfter asks for (0: none). A
// consumer.BatchError is tried again, as a whole batch, only when every
// error it names is retryable; its wait is the longest its errors ask for.
func retryAfter(err error) (time.Duration, bool) {
	errs := []error{err}
	if be, named := consumer.AsBatchError(err); named {
		errs = errs[:0]
		for _, ferr := range be.Failed {
			if ferr != nil && consumer.Classify(ferr) != consumer.ClassRetryable {
				return 0, false
			}
			errs = append(errs, ferr)
		}
	}
	var after time.Duration
	for _, e := range errs {
		var ra *consumer.RetryAfterError
		if errors.As(e, &ra) {
			after = max(after, ra.After)
		}
	}
	return after, true
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
