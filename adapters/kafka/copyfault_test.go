package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// A retry or dead-letter copy the broker refuses leaves its original
// unsettled: Retry and DeadLetter fail, nothing is committed past the
// original, and a new consumer of the group gets it again, with the same
// attempt; once the broker takes copies again, both reach their
// destinations.
func TestFailedCopyKeepsOriginal(t *testing.T) {
	t.Parallel()
	c := newFake(t)
	faults := faultProduce(t, c)
	addrs := c.ListenAddrs()
	topic := uniqueTopic("copyfault")
	const tier = 100 * time.Millisecond
	cfg := Config{Brokers: addrs, Topic: topic, Group: "cf", TopicPartitions: 1, Tiers: retry.Tiers{tier}}
	a := newSource(t, cfg)
	publish(t, client(t, addrs), topic,
		&consumer.Message{ID: "ok", Key: "k", Body: []byte("acked")},
		&consumer.Message{ID: "r", Key: "k", Body: []byte("to retry")},
		&consumer.Message{ID: "d", Key: "k", Body: []byte("to dead-letter")})
	ds := byID(t, receiveN(t, a, 3, 20*time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	faults.fail(t, RetryTopic(topic, "cf", tier), DeadLetterTopic(topic, "cf"))
	err := ds["r"].Retry(ctx, tier, map[string]string{consumer.HeaderAttempt: "2"})
	require.ErrorIs(t, err, kerr.InvalidRecord, "the retry copy's produce failed")
	require.NotErrorIs(t, err, consumer.ErrCopyRefused, "a broker error, not a size refusal")
	err = ds["d"].DeadLetter(ctx, map[string]string{consumer.HeaderDeadLetterReason: consumer.ReasonPermanent})
	require.ErrorIs(t, err, kerr.InvalidRecord, "the dead-letter copy's produce failed")
	require.GreaterOrEqual(t, faults.failed.Load(), int64(2), "the hook refused both copies")
	require.NoError(t, ds["ok"].Ack(ctx))
	faults.heal()
	require.NoError(t, a.commitOwned(ctx, false))
	require.NoError(t, a.Close(ctx))
	require.Empty(t, readAll(t, addrs, RetryTopic(topic, "cf", tier), 0, 0), "no retry copy written")
	require.Empty(t, readAll(t, addrs, DeadLetterTopic(topic, "cf"), 0, 0), "no dead letter written")

	// Both originals come back to the group's next consumer; the acked one
	// before them does not.
	b := newSource(t, cfg)
	defer b.Close(context.Background())
	again := byID(t, receiveN(t, b, 2, 20*time.Second))
	require.ElementsMatch(t, []string{"r", "d"}, keys(again))
	for id, d := range again {
		require.Equal(t, topic, d.Message().Source, id)
		require.Equal(t, 1, d.Message().Attempt, id)
	}
	require.Empty(t, receiveFor(t, b, 300*time.Millisecond), "the acked record came back")

	// The broker takes copies again: nothing was lost.
	require.NoError(t, again["r"].Retry(ctx, tier, map[string]string{consumer.HeaderAttempt: "2"}))
	require.NoError(t, again["d"].DeadLetter(ctx, map[string]string{consumer.HeaderDeadLetterReason: consumer.ReasonPermanent}))
	retried := receiveN(t, b, 1, 10*time.Second)[0].Message()
	require.Equal(t, "r", retried.ID)
	require.Equal(t, 2, retried.Attempt)
	dl := readAll(t, addrs, DeadLetterTopic(topic, "cf"), 1, 10*time.Second)
	require.Len(t, dl, 1)
	require.Equal(t, "d", dl[0].ID)
	require.Equal(t, "to dead-letter", string(dl[0].Body))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
