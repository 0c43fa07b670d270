package kafka

import (
	"context"
	"net"
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
