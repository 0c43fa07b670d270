package kafka

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/retry"
)

// The retry and dead-letter topics a Source creates get the partition count
// of the existing source topic.
func TestCreatedTopicsTakeSourcePartitions(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("parts")
	group := topic
	createTopic(t, addrs, topic, 4)
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: retry.Tiers{time.Second, time.Minute}})
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	created := []string{RetryTopic(topic, group, time.Second), RetryTopic(topic, group, time.Minute), DeadLetterTopic(topic, group)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := kadmClient(t, addrs).ListTopics(ctx, created...)
	require.NoError(t, err)
	for _, name := range created {
		require.NoError(t, md[name].Err, name)
		require.Len(t, md[name].Partitions, 4, name)
	}
}

// Retry tier topics are created keeping their records a week beyond their
// delay, whatever the cluster's default retention: a copy is never deleted
// before it is due.
func TestTierTopicsRetention(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("retention")
	group := topic
	tiers := retry.Tiers{time.Second, 6 * time.Hour}
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: tiers})
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, d := range tiers {
		name := RetryTopic(topic, group, d)
		rcs, err := kadmClient(t, addrs).DescribeTopicConfigs(ctx, name)
		require.NoError(t, err)
		rc, err := rcs.On(name, nil)
		require.NoError(t, err)
		var got string
		for _, c := range rc.Configs {
			if c.Key == "retention.ms" && c.Value != nil {
				got = *c.Value
			}
		}
		require.Equal(t, strconv.FormatInt((d+7*24*time.Hour).Milliseconds(), 10), got, name)
	}
}

// With no broker at the bootstrap address New fails within its context,
// with ErrTopicCreation, instead of hanging.
func TestNewWithoutBroker(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err = New(ctx, Config{Brokers: []string{addr}, Topic: "t", Group: "g", Logger: testLogger()})
	require.ErrorIs(t, err, ErrTopicCreation)
	require.ErrorContains(t, err, addr, "the error names the address")
	t.Logf("error after %s: %v", time.Since(start).Round(time.Millisecond), err)
	require.Less(t, time.Since(start), 8*time.Second)
}
