package crashrun_test

import (
	"testing"
	"time"

	"github.com/oncely/oncely/internal/envtest"
)

// TestCrashNATS kills the ledger on NATS JetStream 10 times mid-stream, with
// dedupe: what a killed ledger held comes back after AckWait (5 s here), and
// the claims absorb what it had applied without acking.
func TestCrashNATS(t *testing.T) {
	t.Parallel()
	crash(t, "nats", envtest.NATS(t)+"?ack_wait=5s", 200, 10)
}

// TestCrashNATSBatch is TestCrashNATS with the ledger's batch handler: a
// batch's acks follow its commit, so a kill lands with batches in their
// transactions, between a commit and its acks, or among the acks; what the
// killed ledger had not acked comes back after AckWait (3 s; renewed every
// second while a batch holds it). Eight kills (each round waits out an
// AckWait) keep it within a minute.
//
// Bug caught: a batch acked before its transaction committed (payments
// lost); redelivered members of a committed batch applied again
// (duplicates); a batch held past AckWait without its deliveries'
// progress being reported, so that a copy is applied beside it.
func TestCrashNATSBatch(t *testing.T) {
	t.Parallel()
	crash(t, "nats-batch", envtest.NATS(t)+"?ack_wait=3s", 200, 8, batchMode(10, 4, 500*time.Millisecond))
}
