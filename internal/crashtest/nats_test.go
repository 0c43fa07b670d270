package crashtest_test

import (
	"testing"

	"github.com/oncely/oncely/internal/testenv"
)

// TestCrashNATS kills the ledger on NATS JetStream 10 times mid-stream, with
// dedupe: what a killed ledger held comes back after AckWait (5 s here), and
// the claims absorb what it had applied without acking.
func TestCrashNATS(t *testing.T) {
	t.Parallel()
	crash(t, "nats", testenv.NATS(t)+"?ack_wait=5s", 200, 10)
}
