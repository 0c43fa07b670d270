// Package adaptertest is the conformance suite every broker adapter passes:
// settle-once, redelivery of unsettled deliveries after close, retries never
// early, dead-letter copies with the documented headers, backpressure and
// per-key order. An adapter's test calls Run with a Harness for its broker.
package adaptertest

import (
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Harness connects the suite to one broker. Every test uses a fresh, unique
// source name, so a Harness needs no cleanup between tests.
type Harness interface {
	// NewSource opens a Source that reads source as consumer name, creating
	// the source, retry and dead-letter destinations when absent. Retry
	// delays must be honoured (never early) for delays from 100ms to 5s.
	// The suite closes the Source.
	NewSource(t testing.TB, source, name string) consumer.Source

	// Publish sends msgs to source in order, with each message's ID in the
	// broker's default place and its Key and Headers, and returns once the
	// broker confirmed them all.
	Publish(t testing.TB, source string, msgs ...*consumer.Message)

	// DeadLetters waits up to timeout until the dead-letter destination of
	// source and consumer name holds at least n messages, and returns them
	// all (ID, Key, Body, Headers filled in; oncely-* headers as written by
	// the runtime, even where the adapter packs them into one attribute).
	DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message
}
