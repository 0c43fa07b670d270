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

// BatchStore is a Store that also claims a whole batch of message IDs in
// one unit of work, for consumer.BatchHandler chains (middleware.Idempotency
// uses it when the handler it wraps is one).
type BatchStore interface {
	Store
	// ProcessBatch claims (consumer, id) for every id of ids at once and
	// runs fn in the claims' unit of work with fresh, the positions in ids
	// of those not claimed before, in ascending order: the first position
	// of each ID claimed now. It returns fresh.
	//
	//   - IDs claimed and committed before, and later positions of an ID
	//     the batch repeats, are not in fresh. When fresh is empty fn is not
	//     called.
	//   - When fn returns nil the claims and fn's effects commit together;
	//     when it returns an error (a consumer.BatchError among them) none
	//     persist and ProcessBatch returns that error unchanged.
	//   - A concurrent ProcessBatch or Process claiming one of the same
	//     keys waits for the first to end, so concurrent copies run fn once
	//     per key, and claims are taken in an order that cannot deadlock.
	//   - Failures of the store itself are wrapped with
	//     consumer.UnavailableFrom, as for Process. A value the store rejects
	//     (for Postgres, a data error of SQLSTATE class 22 in one of the IDs)
	//     fails the whole batch with a plain, retryable error: the runtime
	//     bisects the batch until that message stands alone. An empty ID or
	//     one over MaxMessageIDLength bytes is named in a consumer.BatchError
	//     as permanent.
	ProcessBatch(ctx context.Context, consumer string, ids []string, fn func(ctx context.Context, fresh []int) error) (fresh []int, err error)
}
