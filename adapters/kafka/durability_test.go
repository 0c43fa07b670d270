package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/oncely/oncely/retry"
)

// The topics New creates (the absent source, the dead-letter topic and the
// retry tiers) get Config.ReplicationFactor and Config.MinInsyncReplicas;
// the retry tiers keep their own retention.ms beside it. The broker's own
// min.insync.replicas is 1 too: the test asks for the value set on the topic.
func TestCreatedTopicsDurability(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("durable")
	group := topic
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1,
		ReplicationFactor: 1, MinInsyncReplicas: 1, Tiers: retry.Tiers{time.Second, 10 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, src.Close(ctx))

	created := []string{topic, DeadLetterTopic(topic, group), RetryTopic(topic, group, time.Second), RetryTopic(topic, group, 10*time.Second)}
	adm := kadmClient(t, addrs)
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), created...) })
	configs, err := adm.DescribeTopicConfigs(ctx, created...)
	require.NoError(t, err)
	require.Len(t, configs, len(created))
	for _, rc := range configs {
		require.NoError(t, rc.Err, rc.Name)
		got := map[string]string{}
		for _, c := range rc.Configs {
			if c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				got[c.Key] = *c.Value // set on the topic, not the broker's default
			}
		}
		require.Equal(t, "1", got["min.insync.replicas"], "%s: min.insync.replicas set on the topic", rc.Name)
		if rc.Name == RetryTopic(topic, group, time.Second) {
			require.Equal(t, "604801000", got["retention.ms"], "%s: retention.ms", rc.Name)
		}
	}
	details, err := adm.ListTopics(ctx, created...)
	require.NoError(t, err)
	for _, name := range created {
		for _, p := range details[name].Partitions {
			require.Len(t, p.Replicas, 1, "%s partition %d", name, p.Partition)
		}
	}
}

// A replication factor above the cluster's broker count fails New with
// ErrTopicCreation and the broker's reason, before the caller's deadline.
func TestReplicationFactorAboveBrokers(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("rf3")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src, err := New(ctx, Config{Brokers: addrs, Topic: topic, Group: topic, ReplicationFactor: 3, Logger: testLogger()})
	if err == nil {
		_ = src.Close(ctx)
		t.Fatal("New created topics with replication factor 3 on a single broker")
	}
	require.ErrorIs(t, err, ErrTopicCreation)
	require.True(t, errors.Is(err, kerr.InvalidReplicationFactor), "error %v is not the broker's InvalidReplicationFactor", err)
	require.ErrorContains(t, err, topic)
	require.NoError(t, ctx.Err(), "New failed at its deadline, not at once")
}
