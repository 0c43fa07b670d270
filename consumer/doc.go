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
package consumer
