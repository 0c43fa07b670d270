package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// Three Sources in one group on a three-partition topic with five retry
// tiers (18 partitions) each end up holding exactly one source partition,
// under both group protocols.
//
// Catches: balancing by total partition count over the source and its tier
// topics, which can leave a replica with tier partitions only (it applies
// nothing while another replica works two source partitions).
func TestSourcesSpreadEachTopic(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{{"classic", nil}, {"consumer", []kgo.Opt{kgo.ServerSideBalancer()}}} {
		t.Run(tc.name, func(t *testing.T) {
			topic := uniqueTopic("spread-" + tc.name)
			var sources []*Source
			for range 3 {
				sources = append(sources, newSource(t, Config{Brokers: addrs, Topic: topic, Group: topic, TopicPartitions: 3, Opts: tc.opts}))
			}
			spread := func() string {
				var held []string
				for i, s := range sources {
					ps := s.assigned(topic)
					held = append(held, fmt.Sprint(ps))
					if len(ps) != 1 {
						return fmt.Sprintf("source %d holds %v", i, held)
					}
				}
				return ""
			}
			deadline := time.Now().Add(60 * time.Second)
			for last := spread(); last != ""; last = spread() {
				if time.Now().After(deadline) {
					t.Fatalf("after 60s: %s", last)
				}
				time.Sleep(100 * time.Millisecond) // polling the group's state, bounded by the deadline
			}
			for _, s := range sources {
				require.NoError(t, s.Close(context.Background()))
			}
		})
	}
}

// A static member that died and comes back with the same instance ID on
// another topic consumes the new topic. The broker hands a restarted static
// leader its old plan (KIP-814); franz-go rebalances when its own plan
// differs, for the balancer names it knows only.
//
// Catches: giving the per-topic balancer a protocol name of its own, which
// left the restarted ledger of TestCrashKafkaReal/static-batch on the
// previous run's topic, applying nothing.
func TestStaticRestartOnAnotherTopic(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	group := uniqueTopic("static-move")
	instance := group + "-0"
	old := newSource(t, Config{Brokers: addrs, Topic: group + "-old", Group: group, TopicPartitions: 1, InstanceID: instance})
	publish(t, client(t, addrs), group+"-old", &consumer.Message{ID: "old", Body: []byte("x")})
	require.Equal(t, []string{"old"}, ReceiveAck(t, old, 1))
	old.crash()

	topic := group + "-new"
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, InstanceID: instance})
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "new", Body: []byte("x")})
	require.Equal(t, []string{"new"}, ReceiveAck(t, s, 1))
	require.Empty(t, s.assigned(group+"-old"))
	require.NoError(t, s.Close(context.Background()))
}
