package rabbitmq

import (
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// harness runs the adapter conformance suite against the local RabbitMQ.
type harness struct{}

var (
	_ adaptertest.Harness     = harness{}
	_ adaptertest.CopyFaulter = harness{}
)

func (harness) NewSource(t testing.TB, source, name string) consumer.Source {
	return newSource(t, Config{Queue: source, Consumer: name, Prefetch: suitePrefetch(t)})
}

// suitePrefetch fits the suite's runtime configurations, which the runtime
// checks against the prefetch (MaxInFlight >= Prefetch): 16 (Concurrency 2,
// MaxInFlight 16) holds the most deliveries a case takes unsettled (5), and
// the MaxInFlight case runs MaxInFlight 4.
func suitePrefetch(t testing.TB) int {
	if strings.HasSuffix(t.Name(), "/Backpressure/MaxInFlight") {
		return 4
	}
	return 16
}

func (harness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	// The suite may publish before it opens a Source: the Publisher
	// declares the same source queue, and the cleanup removes it.
	cleanupTopology(t, source, adaptertest.ConsumerName, testTiers)
	publish(t, source, msgs...)
}

func (harness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	queue := DeadLetterQueue(source, name)
	deadline := time.Now().Add(timeout)
	for {
		got := browse(t, queue, KeyHeaderDefault)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FailNextCopy deletes the queue the next op copy of source goes to (every
// retry tier's, or the dead-letter queue): the mandatory publish is returned
// unroutable, so Retry or DeadLetter fails and the broker stores nothing.
// The next Source declares the queue again. (TestCopyPublishFaults also has
// the broker nack the copy.)
func (harness) FailNextCopy(t testing.TB, source string, op adaptertest.CopyOp) {
	t.Helper()
	topo := topology{queue: source, consumer: adaptertest.ConsumerName, tiers: testTiers}
	queues := []string{topo.dlq()}
	if op == adaptertest.CopyRetry {
		queues = topo.retryNames()
	}
	ch, closeConn := openChannel(t)
	defer closeConn()
	for _, q := range queues {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			t.Fatalf("deleting %s: %v", q, err)
		}
	}
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, harness{})
}
