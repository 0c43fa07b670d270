package envtest

import "testing"

// NATSURLDefault is the local NATS server (with JetStream) the test script
// starts.
const NATSURLDefault = "nats://127.0.0.1:4222"

// NATS returns NATS_URL (default NATSURLDefault) after checking the server
// accepts TCP connections.
func NATS(t testing.TB) string {
	t.Helper()
	return require(t, "NATS", "NATS_URL", NATSURLDefault)
}
