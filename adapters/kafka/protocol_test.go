package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestConformanceConsumerProtocol runs the suite with Kafka 4's consumer
// group protocol (KIP-848: the broker assigns partitions), which franz-go
// uses with kgo.ServerSideBalancer.
func TestConformanceConsumerProtocol(t *testing.T) {
	t.Parallel()
	h := &harness{addrs: brokers(t), tune: func(c *Config) { c.Opts = append(c.Opts, kgo.ServerSideBalancer()) }}
	defer h.close()
	adaptertest.Run(t, h)
}

// The group of a Source with kgo.ServerSideBalancer is a consumer-protocol
// group on the broker, and a plain Source's a classic one.
func TestGroupProtocols(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	for _, tc := range []struct {
		want string
		opts []kgo.Opt
	}{{"classic", nil}, {"consumer", []kgo.Opt{kgo.ServerSideBalancer()}}} {
		topic := uniqueTopic("proto-" + tc.want)
		s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: topic, TopicPartitions: 2, Opts: tc.opts})
		publish(t, client(t, addrs), topic, &consumer.Message{ID: "1", Body: []byte("x")})
		require.Equal(t, []string{"1"}, ReceiveAck(t, s, 1))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		groups, err := kadm.NewClient(client(t, addrs)).ListGroups(ctx)
		cancel()
		require.NoError(t, err)
		require.Equal(t, tc.want, groups[topic].GroupType, "group type")
		require.NoError(t, s.Close(context.Background()))
	}
}
