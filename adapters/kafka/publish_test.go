package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// A Publish of one key's messages where one is larger than the producer
// accepts alone: nothing is produced (franz-go would refuse that record and
// produce the others, the next message of its key landing before it), and
// the error wraps kerr.MessageTooLarge naming the message. A message at the
// limit as Publish measures it is produced.
func TestPublishRefusesOversizedMessageWhole(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("publishbig")
	createTopic(t, addrs, topic, 1)
	const limit = 4096
	c, err := NewClient(addrs, kgo.ProducerBatchMaxBytes(limit))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := func(id string, size int) *consumer.Message {
		return &consumer.Message{ID: id, Key: "k", Body: []byte(strings.Repeat("x", size))}
	}
	err = c.Publish(ctx, topic, msg("n", 10), msg("n+1", 2*limit), msg("n+2", 10))
	var produced []string
	for _, m := range readAll(t, addrs, topic, 0, 0) {
		produced = append(produced, m.ID)
	}
	require.Empty(t, produced, "nothing produced")
	require.ErrorIs(t, err, kerr.MessageTooLarge)
	require.ErrorContains(t, err, `message 2 of 3 (ID "n+1")`)

	// The largest body Publish accepts: the record batch at the limit.
	atLimit := msg("at-limit", 0)
	rec := &kgo.Record{Key: []byte(atLimit.Key), Headers: recordHeaders(map[string]string{consumer.HeaderMessageID: atLimit.ID})}
	atLimit.Body = []byte(strings.Repeat("x", limit-batchSize(rec)))
	require.NoError(t, c.Publish(ctx, topic, msg("a", 10), atLimit))
	got := readAll(t, addrs, topic, 2, 10*time.Second)
	require.Len(t, got, 2)
	require.Equal(t, []string{"a", "at-limit"}, []string{got[0].ID, got[1].ID})
	require.ErrorIs(t, c.Publish(ctx, topic, &consumer.Message{ID: atLimit.ID, Key: "k", Body: append(atLimit.Body, 'x')}), kerr.MessageTooLarge)
}
