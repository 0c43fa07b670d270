// Package store defines the seam between the idempotency middleware and the
// storage that records processed message IDs. Implementations: store/postgres
// (claims in the handler's own Postgres transaction) and store/memory (for
// tests and examples).
package store

import "context"

// MaxMessageIDLength is the longest message ID every Store accepts, in bytes.
// consumer.Config.MaxIDLength defaults to it, so longer IDs are dead-lettered
// with reason invalid-id before they reach a Store.
const MaxMessageIDLength = 256

// Store claims message IDs in the same unit of work as a handler's effects.
type Store interface {
	// Process claims (consumer, messageID) and runs fn in the claim's unit of
	// work (for Postgres: one transaction, reachable from the context fn gets).
	//
	//   - If the claim already committed, Process returns duplicate == true
	//     and does not call fn.
	//   - Otherwise fn runs; when it returns nil the claim and fn's effects
	//     commit together, and when it returns an error neither persists and
	//     Process returns that error unchanged (so a retry can run).
	//   - A concurrent Process of the same key waits for the first to end,
	//     so concurrent duplicates run fn once.
	//   - Failures of the store itself (connection, commit, a handler
	//     connection the server closed) are returned wrapped with
	//     consumer.UnavailableFrom, naming the store as the dependency (a
	//     consumer.Prober). The runtime probes it: when the store does not
	//     answer, the failure is an outage and the delivery is held; when it
	//     answers, the failure is this message's and is retried, then
	//     dead-lettered. A value the store rejects for this message (for
	//     Postgres, a data error of SQLSTATE class 22, such as a message ID
	//     that is not valid UTF-8 or holds a NUL byte) is never an outage: it
	//     is returned as a plain, retryable error. A failed commit is never
	//     reported as success.
	Process(ctx context.Context, consumer, messageID string, fn func(ctx context.Context) error) (duplicate bool, err error)
}
