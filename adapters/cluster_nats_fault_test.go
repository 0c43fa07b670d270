//go:build faults

package adapters_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/nats"
)

// TestFaultNATSClusterStreamLeaderKilled: on three nats-servers
// (scripts/cluster.sh start nats) with the source, retry and dead-letter
// streams replicated on all three, the server leading the source stream is
// killed mid-run and restarted. Every message's effect commits once. Key
// order is not asserted: deliveries the dying server had sent and the Source
// never received come back after AckWait, behind later messages of their
// keys (docs/brokers.md); the run logs how many effects that reordered.
func TestFaultNATSClusterStreamLeaderKilled(t *testing.T) {
	natsClusterFault(t, false).requireNothingLost(t)
}

// TestFaultNATSClusterCopyLeaderKilled: as above, but the server leading
// the retry stream is killed as a handler fails, while its retry (or
// dead-letter) copy is being published.
func TestFaultNATSClusterCopyLeaderKilled(t *testing.T) {
	res := natsClusterFault(t, true)
	res.requireNothingLost(t)
	res.requireKeyOrder(t)
}

// natsClusterFault runs one node-failure run on the NATS cluster, killing
// the source stream's leader or, with onCopy, the retry stream's.
func natsClusterFault(t *testing.T, onCopy bool) clusterResult {
	url := clusterVar(t, "NATS_CLUSTER_URL", "nats")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	nc, err := natsgo.Connect(url, natsgo.MaxReconnects(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	source := fmt.Sprintf("cluster%d", time.Now().UnixNano())
	stream := nats.StreamName(source)
	for _, subject := range []string{source, nats.RetrySubject(source, "ledger"), nats.DeadLetterSubject(source, "ledger")} {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: nats.StreamName(subject), Subjects: []string{subject}, Storage: jetstream.FileStorage, Replicas: 3})
		require.NoError(t, err)
	}
	info := func(stream string) *jetstream.StreamInfo {
		ictx, icancel := context.WithTimeout(ctx, 5*time.Second)
		defer icancel()
		s, err := js.Stream(ictx, stream)
		if err != nil {
			return nil
		}
		in, err := s.Info(ictx)
		if err != nil {
			return nil
		}
		return in
	}
	killed := stream
	if onCopy {
		killed = nats.StreamName(nats.RetrySubject(source, "ledger"))
	}
	return runClusterFault(t, clusterFault{
		url:    url + "?prefetch=32&ack_wait=5s&replicas=3",
		source: source,
		leader: func(t *testing.T) string {
			in := info(killed)
			require.NotNil(t, in, "stream info")
			require.NotNil(t, in.Cluster, "the stream is replicated")
			return in.Cluster.Leader
		},
		settled: func(t *testing.T) {
			waitFor(t, ctx, "stream with all three replicas current", func() bool {
				in := info(stream)
				if in == nil || in.Cluster == nil || in.Cluster.Leader == "" || len(in.Cluster.Replicas) != 2 {
					return false
				}
				for _, r := range in.Cluster.Replicas {
					if !r.Current || r.Offline {
						return false
					}
				}
				return true
			})
		},
		onCopy: onCopy,
	})
}
