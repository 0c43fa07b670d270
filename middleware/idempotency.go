package middleware

import (
	"context"
	"errors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store"
)

// ErrNoConsumerName is returned by Idempotency when the context carries no
// consumer name: the chain was called outside a Consumer without
// consumer.WithName. Claims are keyed by the name, so none can be taken.
var ErrNoConsumerName = errors.New("oncely: idempotency needs the consumer name in the context (consumer.WithName)")

// ErrNoMessageID is returned, marked consumer.Permanent, by Idempotency for a
// message with an empty ID. The Consumer dead-letters such messages with
// reason missing-id before any middleware runs.
var ErrNoMessageID = errors.New("oncely: idempotency needs a message ID")

// Idempotency runs the wrapped handler at most once per (consumer name,
// message ID) among successful runs: it calls s.Process, which claims the key
// and runs the handler in the claim's unit of work (for store/postgres, one
// transaction that the handler's writes join). When the key was already
// claimed and committed, the handler is skipped, the attempt is marked with
// consumer.MarkDuplicate and Idempotency returns nil, so the runtime acks the
// delivery and counts a duplicate; a claim it committed is reported with
// consumer.MarkClaimed, the runtime's witness that the message was
// deduplicated. A handler error releases the claim and is
// returned unchanged, so a retry runs the handler again. So is a failure of
// the store itself, which the store wraps with consumer.UnavailableFrom
// naming itself: the runtime probes the store and holds the delivery as an
// outage only when the store does not answer (see store.Store).
//
// The handler it returns is marked with consumer.Deduplicating, so
// consumer.New accepts the chain without Config.Duplicates.
//
// Around a consumer.BatchHandler, with a store.BatchStore (both stores of
// this module are), the handler it returns is a BatchHandler: it claims the
// whole batch at once with s.ProcessBatch, passes on only the messages not
// processed before (consumer.MarkDuplicates marks the others), and maps the
// positions of a consumer.BatchError back to its own batch. With a Store
// that cannot claim batches it returns a plain Handler, which consumer.New
// refuses around a BatchHandler (consumer.ErrNotBatch).
//
// Put it inside Retry and Timeout so each try has its own claim. Idempotency
// panics if s is nil.
func Idempotency(s store.Store) consumer.Middleware {
	if s == nil {
		panic("middleware.Idempotency: nil store")
	}
	return func(next consumer.Handler) consumer.Handler {
		if bnext, ok := next.(consumer.BatchHandler); ok {
			if bs, ok := s.(store.BatchStore); ok {
				return consumer.Deduplicating(&idempotentBatch{s: bs, next: bnext})
			}
			// Not a BatchHandler: consumer.New reports the chain (ErrNotBatch).
		}
		return consumer.Deduplicating(consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			name := consumer.NameFromContext(ctx)
			if name == "" {
				return ErrNoConsumerName
			}
			if msg.ID == "" {
				return consumer.Permanent(ErrNoMessageID)
			}
			dup, err := s.Process(ctx, name, msg.ID, func(ctx context.Context) error {
				return next.Handle(ctx, msg)
			})
			if err != nil {
				return err
			}
			if dup {
				consumer.MarkDuplicate(ctx)
			} else {
				consumer.MarkClaimed(ctx)
			}
			return nil
		}))
	}
}
