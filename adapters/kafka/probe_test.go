package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Probe succeeds while the brokers answer with a leader for every
// partition of the source, retry and dead-letter topics, and fails while a
// topic has no leader or no broker answers.
func TestProbe(t *testing.T) {
	t.Parallel()
	c := newFake(t)
	addrs := c.ListenAddrs()
	topic := uniqueTopic("probe")
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: "pr", Tiers: retry.Tiers{time.Second}})
	defer src.Close(context.Background())
	var p consumer.Prober = src
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Probe(ctx))

	// The dead-letter topic's partitions lose their leader: only the
	// probe's requests name it (the Source has produced nothing).
	dlq := DeadLetterTopic(topic, "pr")
	var broken atomic.Bool
	broken.Store(true)
	leaderless(c, dlq, &broken)
	err := p.Probe(ctx)
	require.ErrorIs(t, err, kerr.LeaderNotAvailable)
	broken.Store(false)
	require.NoError(t, p.Probe(ctx))

	// No broker answers.
	c.Close()
	short, cancelShort := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancelShort()
	start := time.Now()
	err = p.Probe(short)
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second, "Probe honours its context")
	require.False(t, errors.Is(err, kerr.LeaderNotAvailable))
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	for _, retention := range []time.Duration{0, 48 * time.Hour} {
		s := &Source{cfg: Config{ClaimRetention: retention}}
		require.Equal(t, consumer.Capabilities{
			Broker:      "kafka",
			Partitioned: true,
			NativeDelay: true,
			MaxDelay:    retention, // tiers hop: only the claims bound a delay
			FanOut:      true,
			Prefetch:    0,
		}, s.Capabilities())
	}
}

// leaderless makes kfake answer Metadata requests that name topic with
// partitions without a leader while broken is set (a broker that is down
// for that topic, as a probe sees it).
func leaderless(c *kfake.Cluster, topic string, broken *atomic.Bool) {
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.MetadataRequest)
		named := false
		for _, rt := range req.Topics {
			named = named || (rt.Topic != nil && *rt.Topic == topic)
		}
		if !broken.Load() || !named {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Version = req.Version
		for _, rt := range req.Topics {
			st := kmsg.NewMetadataResponseTopic()
			st.Topic = rt.Topic
			sp := kmsg.NewMetadataResponseTopicPartition()
			sp.ErrorCode = kerr.LeaderNotAvailable.Code
			sp.Leader = -1
			st.Partitions = append(st.Partitions, sp)
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}
