package consumer

import (
	"context"
	"time"
)

// Source is what a broker adapter implements: it yields deliveries and owns the
// broker's lease on them (Kafka offsets, AMQP delivery tags, SQS receipt
// handles and visibility).
//
// For adapter authors (see the package doc).
type Source interface {
	// Receive blocks until at least one delivery is available and returns at
	// most max of them (max >= 1). The runtime calls it only when it has room
	// for max more in-flight deliveries, so an adapter that fetches only inside
	// Receive gets backpressure for free; an adapter with a background fetcher
	// must stop fetching while Receive is not being called.
	//
	// Receive returns ctx.Err() when ctx is done and ErrSourceClosed once
	// Close has been called. Other errors are reported by the runtime and
	// Receive is retried with backoff. The returned slice is the runtime's:
	// the adapter must not reuse it.
	Receive(ctx context.Context, max int) ([]Delivery, error)

	// Close stops intake and releases the broker lease on every unsettled
	// delivery so the broker redelivers it (to this or another consumer).
	// The runtime calls Close only after in-flight handlers have returned and
	// their settlements were written. Close is idempotent.
	Close(ctx context.Context) error

	// Capabilities describes what the broker can do; the runtime checks its
	// Config against it at construction.
	Capabilities() Capabilities
}

// Delivery is one message plus the means to settle it. The runtime settles
// each delivery at most once; adapters may treat a second settlement as a bug
// and return ErrAlreadySettled.
//
// For adapter authors (see the package doc).
type Delivery interface {
	// Message returns the message. The runtime and middleware may read it
	// concurrently with nothing else; it must not change after Receive.
	Message() *Message

	// Ack records that the message was processed. For Kafka this marks the
	// offset done (commits are contiguous and may be deferred); for AMQP it is
	// basic.ack; for SQS a (batched) delete.
	Ack(ctx context.Context) error

	// Retry publishes a copy of the message (same ID, Key and Body; headers
	// replaced by headers) to be delivered again no sooner than after, waits
	// for the broker to confirm it, then acknowledges the original. If the
	// publish fails, Retry returns an error and the original stays unsettled.
	Retry(ctx context.Context, after time.Duration, headers map[string]string) error

	// DeadLetter publishes a copy (same ID, Key and Body; headers replaced by
	// headers, which include HeaderDeadLetterReason) to the dead-letter
	// destination, waits for the broker's confirmation, then acknowledges the
	// original. If the publish fails, the original stays unsettled.
	DeadLetter(ctx context.Context, headers map[string]string) error
}

// Leased is implemented by deliveries whose broker lease can be lost while the
// handler runs (a revoked Kafka partition, an SQS visibility extension that
// failed, a closed AMQP channel). When Lost is closed the runtime cancels the
// handler's context and does not settle the delivery.
//
// For adapter authors (see the package doc).
type Leased interface {
	Lost() <-chan struct{}
}

// LeaseContexter is an optional companion of Leased for adapters that hold
// the lease as a context: LeaseContext is done exactly when Lost is closed.
// The runtime then cancels the handler with context.AfterFunc instead of a
// goroutine per delivery, and records the loss in the same hook: a lease
// already done when its delivery starts is seen at once, one that ends
// later a moment after it ends (as if it had ended then).
//
// For adapter authors (see the package doc).
type LeaseContexter interface {
	LeaseContext() context.Context
}

// Capabilities is an adapter's capability table. The runtime and the adapters
// reject configurations a broker cannot honour, at start-up.
//
// For adapter authors (see the package doc).
type Capabilities struct {
	// Broker names the broker, e.g. "kafka", "rabbitmq", "sqs", "memory".
	Broker string

	// Partitioned reports whether messages carry a meaningful Partition, so
	// OrderByPartition can keep one lane per partition.
	Partitioned bool

	// NoOrder reports that the broker hands out messages in no particular
	// order (SQS standard queues): Ordering then orders deliveries as they
	// arrive, which need not be publish order, and the adapter may give
	// unkeyed messages keys of their own. False (the default): messages of
	// one partition, or of the source when unpartitioned, arrive in
	// publish order, and unkeyed ones keep an empty Key.
	NoOrder bool

	// NativeDelay reports whether Retry honours its delay on the broker.
	NativeDelay bool

	// RetryInPlace reports that Retry keeps the message's place in its
	// key's order instead of publishing a copy (Kafka's RetryInPlace): the
	// runtime then settles a retry, and a dead letter, on the worker, before
	// the next delivery of the key runs. False (the default): retry and
	// dead-letter copies settle off the workers, and a message settled so
	// gives up its place in its key's order.
	RetryInPlace bool

	// MaxDelay is the longest delay Retry supports; zero means no limit.
	MaxDelay time.Duration

	// RetryDelay, when set, is the delay Retry actually waits when asked
	// for about d and no less than atLeast (a RetryAfter; zero: no floor):
	// a broker whose retries wait a fixed tier (RabbitMQ's TTL queues) or
	// whole seconds (SQS visibility) rounds. The runtime retries with the
	// delay it returns, so the "retrying" log line, the not-before header
	// and Event.RetryAfter state the delay the broker waits. Nil (the
	// default): Retry waits exactly the delay it is given.
	RetryDelay func(d, atLeast time.Duration) time.Duration

	// DeliveryCount reports whether the broker counts deliveries itself
	// (Message.Attempt then survives a lost header).
	DeliveryCount bool

	// LeaseRenewal reports whether the adapter renews the broker lease while
	// a handler runs (SQS visibility).
	LeaseRenewal bool

	// FanOut reports what two consumer names of one source get. True: each
	// consumer name gets every message of the source (Kafka: a consumer
	// group per name). False: consumer names share the source's queue and
	// split its messages (RabbitMQ, SQS, memory); idempotency claims,
	// retry and dead-letter destinations are still kept per name.
	FanOut bool

	// Prefetch is the most deliveries the broker pushes to this Source
	// before Receive asks for them (AMQP prefetch), zero when the adapter
	// only fetches inside Receive. The runtime refuses a MaxInFlight smaller
	// than Prefetch: deliveries the runtime has no room for would sit
	// unhandled in the client and return to the queue on every close.
	Prefetch int
}

// ConsumerNamer is implemented by Sources opened for a consumer name (every
// adapter's: the name keys their consumer group, retry and dead-letter
// destinations). New refuses a Config.Name that differs from it, since
// idempotency claims would then live under one name and dead letters under
// another.
//
// For adapter authors (see the package doc).
type ConsumerNamer interface {
	ConsumerName() string
}

// TierLimiter is implemented by Sources whose retries wait in fixed delay
// tiers they create on the broker (Kafka retry topics, RabbitMQ TTL queues).
// New calls LimitTiers once, before it returns, with the longest delay its
// Retry policy asks for (retry.Policy.Reach); the Source then creates, on
// its first Receive, only the tiers up to the first one not shorter than
// that (retry.Tiers.Upto). A Source never told creates every tier of its
// configuration. A longer delay (a handler's RetryAfter) is still honoured:
// it waits in the largest tier created, again and again until due.
//
// For adapter authors (see the package doc).
type TierLimiter interface {
	LimitTiers(longest time.Duration)
}

// BacklogReporter is implemented by sources that can say how far behind the
// consumer is: Kafka lag per partition, queue depth for RabbitMQ and SQS. The
// metrics poller and the CLI's lag command use it.
//
// For adapter authors (see the package doc).
type BacklogReporter interface {
	Backlog(ctx context.Context) ([]Backlog, error)
}

// Backlog is one line of a BacklogReporter's answer.
//
// For adapter authors (see the package doc).
type Backlog struct {
	// Source is the topic or queue.
	Source string
	// Partition is the Kafka partition, or -1.
	Partition int32
	// Lag is Kafka's end offset minus the committed offset, or the number
	// of messages waiting in (and leased from) a queue.
	Lag int64
	// DeadLetters is the depth of the dead-letter destination, or -1 when
	// unknown or not applicable (Kafka partitions report it on partition -1).
	DeadLetters int64
	// NeverCommitted reports a Kafka partition for which the consumer
	// group has no committed offset: Lag then counts every retained record
	// (the group never ran, or has not finished a record there yet). Always
	// false for queues.
	NeverCommitted bool
}
