package main

import (
	"testing"

	"github.com/oncely/oncely/internal/envtest"
)

// TestDLQAndLagRedis runs dlq list, show, redrive and lag on Redis Streams:
// the redriven message waits in the consumer's retry stream, which the
// source's lag line counts.
func TestDLQAndLagRedis(t *testing.T) {
	testDLQ(t, envtest.Redis(t)+"?lease=5s", nil)
}
