//go:build faults

package rabbitmq

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
)

// faultHarness answers the fault matrix: its Sources reach the test broker
// through a TCP proxy; it publishes and reads dead letters straight from
// the broker, as the conformance harness does.
type faultHarness struct {
	harness
	url   string
	proxy *proxytest.Proxy
}

var _ adaptertest.Faulter = (*faultHarness)(nil)

func (h *faultHarness) NewSource(t testing.TB, source, name string) consumer.Source {
	return newSource(t, Config{URL: h.url, Queue: source, Consumer: name, Prefetch: 16})
}

// FaultCase injects a fault into the proxy or the queues, or runs the
// adapter's own test of it.
func (h *faultHarness) FaultCase(f adaptertest.Fault) adaptertest.FaultCase {
	switch f {
	case adaptertest.BrokerRestart:
		return adaptertest.FaultCase{Run: brokerRestart}
	case adaptertest.BrokerRestartNoPersistence:
		return adaptertest.FaultCase{NotApplicable: "every queue the adapter declares is durable and every message persistent: a restart keeps them (BrokerRestart)"}
	case adaptertest.CutMidReceive, adaptertest.CutMidSettle:
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.proxy.Refuse()
			h.proxy.Cut()
			return h.proxy.Accept
		}}
	case adaptertest.LeaseLost:
		return adaptertest.FaultCase{Run: TestLateAckAfterReconnect}
	case adaptertest.DeliveryLimit:
		return adaptertest.FaultCase{Run: TestDeliveryLimitDeadLetters}
	case adaptertest.CopyRefused:
		return adaptertest.FaultCase{Inject: func(t testing.TB, source string) func() {
			return refuseQueues(t, topology{queue: source, consumer: adaptertest.ConsumerName, tiers: testTiers}.retryNames())
		}}
	case adaptertest.DeadLetterGone:
		return adaptertest.FaultCase{Inject: func(t testing.TB, source string) func() {
			return refuseQueues(t, []string{DeadLetterQueue(source, adaptertest.ConsumerName)})
		}}
	case adaptertest.DelayedRetriesSaturate:
		return adaptertest.FaultCase{NotApplicable: "a retry copy waits in its tier's TTL queue, outside the consumer's prefetch window, until it is dead-lettered back to the source queue"}
	case adaptertest.ReplicaConfigsDiffer:
		return adaptertest.FaultCase{Run: TestLegacyDeliveryLimit}
	case adaptertest.KillInFlight:
		return adaptertest.FaultCase{Run: TestKillConsumerProcess}
	case adaptertest.CopyRefusedMidSettlement:
		return adaptertest.FaultCase{Run: TestCopyPublishFaults}
	case adaptertest.CloseInFlight:
		return adaptertest.FaultCase{} // injected by the kit: everything checked
	}
	return adaptertest.FaultCase{}
}

// refuseQueues replaces queues by full ones (x-max-length 0, x-overflow
// reject-publish): the broker nacks every copy published to them. The
// returned func deletes them again; the Source declares them anew when a
// copy comes back unroutable.
func refuseQueues(t testing.TB, queues []string) func() {
	t.Helper()
	ch, closeConn := openChannel(t)
	defer closeConn()
	for _, q := range queues {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			t.Fatalf("deleting %s: %v", q, err)
		}
		if _, err := ch.QueueDeclare(q, true, false, false, false, amqp.Table{"x-max-length": int64(0), "x-overflow": "reject-publish"}); err != nil {
			t.Fatalf("declaring %s full: %v", q, err)
		}
	}
	return func() {
		ch, closeConn := openChannel(t)
		defer closeConn()
		for _, q := range queues {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil {
				t.Fatalf("deleting %s: %v", q, err)
			}
		}
	}
}

// TestFaultMatrix runs the fault kit's matrix on RabbitMQ. Its
// BrokerRestart cell stops the shared broker's application.
func TestFaultMatrix(t *testing.T) {
	url, proxy := proxied(t)
	adaptertest.RunFaults(t, &faultHarness{url: url, proxy: proxy})
}
