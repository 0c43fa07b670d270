package consumer

import "context"

// Prober is a dependency the runtime can ask whether it is up: a store (a
// Postgres ping on a fresh connection) or a Source (a broker metadata call).
//
// The runtime never decides "outage" from an error's type alone. When an
// attempt fails with an UnavailableError that names its Dependency, or when a
// settlement (ack, retry or dead-letter publish) fails on a Source that is a
// Prober, the runtime probes:
//
//   - Probe fails: the dependency is down. The delivery is held unsettled,
//     the failure counts towards the breaker, and the same delivery is tried
//     again after the outage backoff.
//   - Probe succeeds: the dependency answers, so the failure belongs to this
//     message (an ID the database rejects, a connection the server killed, a
//     copy the broker refuses). It counts as an attempt of the message and
//     follows the retry policy, then the dead-letter destination.
//
// While the breaker is open it probes the dependency that opened it on its own
// schedule and closes as soon as a probe succeeds, whether or not a held
// delivery is left.
//
// Probe must be cheap, must not touch any message, and must honour ctx; the
// runtime bounds each call with Config.ProbeTimeout.
type Prober interface {
	Probe(ctx context.Context) error
}

// ProberFunc adapts a function to Prober.
type ProberFunc func(ctx context.Context) error

// Probe calls f(ctx).
func (f ProberFunc) Probe(ctx context.Context) error { return f(ctx) }
