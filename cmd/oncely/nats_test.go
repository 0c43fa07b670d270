package main

import (
	"testing"

	"github.com/oncely/oncely/internal/envtest"
)

// TestDLQAndLagNATS drives dlq list, show, redrive and lag on NATS
// JetStream (NATS_URL, required under CI=true).
func TestDLQAndLagNATS(t *testing.T) {
	testDLQ(t, envtest.NATS(t), nil)
}
