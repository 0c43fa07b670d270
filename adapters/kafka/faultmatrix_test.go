//go:build faults

package kafka

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
)

// faultHarness answers the fault matrix on the suite's Kafka (brokers(t):
// Apache Kafka under CI). Its Sources reach the broker through a TCP proxy
// (every connection, whatever address the metadata advertises: the test
// broker is a single node); it publishes and reads dead letters straight
// from the broker, as the conformance harness does. The broker restarts
// run on a kfake cluster of the test's own (see faultrestart_test.go): the
// shared broker must not stop.
type faultHarness struct {
	*harness
	proxy   *proxytest.Proxy
	session time.Duration // the group session timeout; 0: franz-go's default
}

var _ adaptertest.Faulter = (*faultHarness)(nil)

// newFaultHarness returns a faultHarness over addrs, a single broker, its
// Sources' group session lasting session (0: franz-go's default).
func newFaultHarness(t *testing.T, addrs []string, session time.Duration) *faultHarness {
	t.Helper()
	proxy, err := proxytest.New(addrs[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	var dialer net.Dialer
	through := kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, proxy.Addr())
	})
	opts := []kgo.Opt{through}
	if session > 0 {
		opts = append(opts, kgo.SessionTimeout(session))
	}
	h := &harness{addrs: addrs, tune: func(c *Config) { c.Opts = append(c.Opts, opts...) }}
	t.Cleanup(h.close)
	return &faultHarness{harness: h, proxy: proxy, session: session}
}

// Publish creates source's topic on first use and waits until every
// partition has a leader (Apache Kafka briefly answers
// UNKNOWN_TOPIC_OR_PARTITION for a topic just created), then publishes.
func (h *faultHarness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	if _, done := h.created.LoadOrStore(source, true); !done {
		createTopic(t, h.addrs, source, harnessPartitions)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, waitReady(ctx, h.producer(t), []string{source}))
	}
	publish(t, h.producer(t), source, msgs...)
}

// FaultCase injects a fault into the proxy or the broker's topic
// configuration, runs the broker restarts on a kfake cluster of the
// test's own, or names the adapter's own test of the fault.
func (h *faultHarness) FaultCase(f adaptertest.Fault) adaptertest.FaultCase {
	switch f {
	case adaptertest.BrokerRestart:
		return adaptertest.FaultCase{Run: func(t *testing.T) { adaptertest.RunFault(t, newRestartHarness(t, true), f) }}
	case adaptertest.BrokerRestartNoPersistence:
		return adaptertest.FaultCase{Run: func(t *testing.T) { adaptertest.RunFault(t, newRestartHarness(t, false), f) }}
	case adaptertest.CutMidReceive, adaptertest.CutMidSettle:
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.proxy.Refuse()
			h.proxy.Cut()
			return h.proxy.Accept
		}}
	case adaptertest.CopyRefused:
		return adaptertest.FaultCase{Inject: func(t testing.TB, source string) func() {
			cfg := h.config(source, adaptertest.ConsumerName).withDefaults()
			return h.refuseCopies(t, RetryTopic(source, cfg.Group, cfg.Tiers.Tier(adaptertest.RetryDelay)))
		}}
	case adaptertest.DeadLetterGone:
		return adaptertest.FaultCase{Inject: func(t testing.TB, source string) func() {
			return h.refuseCopies(t, DeadLetterTopic(source, h.group(source, adaptertest.ConsumerName)))
		}}
	case adaptertest.LeaseLost:
		if h.session == 0 {
			return adaptertest.FaultCase{Run: func(t *testing.T) {
				adaptertest.RunFault(t, newFaultHarness(t, h.addrs, leaseSession), f)
			}}
		}
		return adaptertest.FaultCase{Inject: h.loseLease}
	case adaptertest.KillInFlight:
		return adaptertest.FaultCase{Run: TestCrashRedeliveryDeduped}
	case adaptertest.CopyRefusedMidSettlement:
		return adaptertest.FaultCase{Run: TestFailedCopyKeepsOriginal}
	case adaptertest.DelayedRetriesSaturate:
		return adaptertest.FaultCase{Run: TestFarRetryDoesNotBlockTier}
	case adaptertest.DeliveryLimit:
		return adaptertest.FaultCase{NotApplicable: "Kafka counts no deliveries: a record comes again from the committed offset, and the retry policy's attempts, carried in the copies' attempt header, are the only limit (conformance case DeadLetter)"}
	case adaptertest.ReplicaConfigsDiffer:
		return adaptertest.FaultCase{Run: TestReplicasWithDifferentTiers}
	}
	return adaptertest.FaultCase{}
}

// leaseSession is the group session of the LeaseLost case: the shortest an
// Apache Kafka broker accepts by default (group.min.session.timeout.ms).
const leaseSession = 6 * time.Second

// loseLease cuts the Sources' connections until the broker has removed
// their member from source's group (its session expired): the partitions,
// and with them the lease of every delivery held by a handler, are lost.
// The held handlers return during the cut; the member that comes back
// joins anew and gets the records whose offsets were not committed again.
func (h *faultHarness) loseLease(t testing.TB, source string) func() {
	h.proxy.Refuse()
	h.proxy.Cut()
	group := h.group(source, adaptertest.ConsumerName)
	return func() {
		defer h.proxy.Accept()
		adm := kadm.NewClient(h.producer(t))
		adaptertest.WaitUntil(t, 5*h.session, "the member's session expired", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			gs, err := adm.DescribeGroups(ctx, group)
			if err != nil {
				return false
			}
			g, ok := gs[group]
			return ok && g.Err == nil && len(g.Members) == 0
		})
	}
}

// refuseCopies makes the broker refuse every record produced to topic
// (max.message.bytes of one byte: MESSAGE_TOO_LARGE, nothing stored) and
// returns the func that gives the topic its broker default back.
func (h *faultHarness) refuseCopies(t testing.TB, topic string) func() {
	t.Helper()
	alter := func(value *string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		op := kadm.SetConfig
		if value == nil {
			op = kadm.DeleteConfig
		}
		resp, err := kadm.NewClient(h.producer(t)).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "max.message.bytes", Value: value}}, topic)
		require.NoError(t, err)
		for _, r := range resp {
			require.NoError(t, r.Err, "altering %s", r.Name)
		}
	}
	alter(kadm.StringPtr("1"))
	return func() { alter(nil) }
}

// TestFaultMatrix runs the fault kit's matrix on Kafka.
func TestFaultMatrix(t *testing.T) {
	adaptertest.RunFaults(t, newFaultHarness(t, brokers(t), 0))
}
