//go:build faults

package kafka

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// restartHarness answers the two broker-restart cases on a one-broker kfake
// cluster of the test's own, stopped and started again on the same port:
// the shared Apache Kafka must not stop, and a private one is too heavy
// for the test machine. With persist the cluster writes its state (logs,
// topics, groups, committed offsets) to a directory, every batch synced,
// and reloads it on start; without, it starts empty: no topics, groups or
// offsets.
type restartHarness struct {
	*harness
	t       *testing.T
	persist bool
	dir     string
	port    int
	cluster *kfake.Cluster
}

var _ adaptertest.Faulter = (*restartHarness)(nil)

func newRestartHarness(t *testing.T, persist bool) *restartHarness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	r := &restartHarness{t: t, persist: persist, dir: t.TempDir(), port: port}
	r.start()
	t.Cleanup(func() {
		if r.cluster != nil {
			r.cluster.Close()
		}
	})
	r.harness = &harness{addrs: []string{"127.0.0.1:" + strconv.Itoa(port)}}
	t.Cleanup(r.harness.close)
	return r
}

// start starts the cluster on the harness's port, with the state the last
// one stored when persist is set.
func (r *restartHarness) start() {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(r.port), kfake.DefaultNumPartitions(1)}
	if r.persist {
		opts = append(opts, kfake.DataDir(r.dir), kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	require.NoError(r.t, err)
	r.cluster = c
}

// stop stops the cluster; connections to it are closed.
func (r *restartHarness) stop() {
	r.cluster.Close()
	r.cluster = nil
}

// Publish creates source's topic if the broker does not have it (after an
// empty restart, as whoever produces to it would), then publishes with a
// client of its own: one that knew the topic before an empty restart
// keeps the old topic ID and fails.
func (r *restartHarness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	createTopic(t, r.addrs, source, harnessPartitions)
	publish(t, client(t, r.addrs), source, msgs...)
}

// FaultCase stops the cluster and starts it again, kept or empty; every
// other fault is run by faultHarness on the suite's broker.
func (r *restartHarness) FaultCase(f adaptertest.Fault) adaptertest.FaultCase {
	if f != adaptertest.BrokerRestart && f != adaptertest.BrokerRestartNoPersistence {
		return adaptertest.FaultCase{NotApplicable: "run by TestFaultMatrix's own harness"}
	}
	return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
		r.stop()
		return r.start
	}}
}
