// Package consumer is the core of oncely: the Message and Handler types, the
// contracts a broker adapter implements (Source and Delivery), the errors that
// steer settlement, and the Consumer runtime that ties them together.
//
// The path of one message:
//
//	broker ─► Source ─► Consumer (per-key lanes, bounded in-flight)
//	       ─► middleware chain ─► Handler ─► settle: Ack | Retry(after) | DeadLetter(reason)
//
// Guarantees the runtime gives every handler:
//
//   - A delivery is settled at most once, and only after the handler chain
//     returned. Nothing is acknowledged that did not finish.
//   - A retry or dead-letter copy is published (and confirmed by the broker,
//     which is the adapter's duty) before the original is acknowledged. If that
//     publish fails, the original stays unsettled and comes back.
//   - Messages with the same ordering key are handled one at a time, in the
//     order the Source yielded them; different keys run in parallel.
//   - A message with no ID, or an ID longer than Config.MaxIDLength, is
//     dead-lettered with reason missing-id or invalid-id; it never reaches the
//     handler and never crash-loops.
//   - Infrastructure failures (errors marked with Unavailable) are neither
//     retried on the broker nor dead-lettered: the delivery is held, intake
//     pauses with backoff (the breaker), and the handler is tried again until
//     the dependency answers or the consumer stops.
//
// Delivery is at-least-once. Combined with an idempotency middleware backed by
// a store (see package store), each message's effects commit exactly once.
//
// # Application API
//
// An application needs New, Config (with Ordering and Observer), Consumer's
// Run, Stop and Paused, the Handler, HandlerFunc, Middleware, Chain and
// Recover shapes, Message, and the error wrappers that steer settlement:
// Permanent, RetryAfter, Unavailable, UnavailableFrom and DownFrom (with
// Prober or ProberFunc for the dependency to probe), and the error types they
// make (PermanentError, RetryAfterError, UnavailableError, PanicError). Classify and Class let a
// Config.Classify delegate to the default; Event and Outcome are what an
// Observer sees.
//
// A handler that applies messages with set-based statements is a
// BatchHandler (BatchHandlerFunc); given to New, the Consumer feeds it
// batches of up to Config.BatchSize messages (lingering Config.BatchMaxWait
// for a batch to fill), each key's messages in arrival order and no key in
// two batches at once. It names the messages that failed with a BatchError;
// any other failure is bisected until the failing messages stand alone.
// Every middleware around it must handle batches too (ErrNotBatch).
//
// New refuses a handler with no middleware at all (ErrNoIdempotency) unless
// Config.Duplicates is AllowDuplicates with a reason; Duplicates reports it,
// and the opt-out is logged at Info. Beyond what New can see, the runtime
// witnesses each message's claim: without an opt-out, a message whose
// handler returned nil without passing through a claim (MarkClaimed) is
// dead-lettered with reason ReasonNoClaim, never acked.
//
// # For adapter authors
//
// A broker adapter implements Source and Delivery, and optionally Leased,
// LeaseContexter, ConsumerNamer, TierLimiter, BacklogReporter, Connected, CopyTrimmer and
// Prober; it describes itself with Capabilities and reports Backlog. It
// builds retry and dead-letter copies with FailureHeaders (from a Failure),
// FitCopy (Fitted, CopySize) and the Header* and Reason* constants, reads
// them back with AttemptFromHeaders and NotBeforeFromHeaders, and returns
// ErrSourceClosed, ErrAlreadySettled and ErrCopyRefused as documented.
//
// # For middleware authors
//
// A middleware that deduplicates (runs its handler at most once per message
// ID, as middleware.Idempotency does) marks its handler with Deduplicating,
// so New sees the chain deduplicate, and reports each message it let through
// a committed claim with MarkClaimed, the runtime's per-message witness.
// Middleware reads the runtime's context values with NameFromContext and
// BrokerFromContext, reports a skipped duplicate with MarkDuplicate (read
// with IsDuplicate), and builds such a context for tests with WithName,
// WithBroker and WithAttemptState (see hooks.go). Around a BatchHandler, a
// middleware returns a BatchHandler too (HandleOne gives its Handle
// method), reports duplicates of a batch with MarkDuplicates and reads a
// handler's BatchError with AsBatchError.
package consumer
