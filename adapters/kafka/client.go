package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// Client is a Kafka connection for the work around a consumer: publishing
// messages the way a Source reads them, creating topics, reporting a group's
// backlog and reading (and removing) its dead letters without joining the
// group. Its methods are safe for concurrent use.
type Client struct {
	cl  *kgo.Client
	adm *kadm.Client

	batchMax    func(topic string) int32 // the producer's batch limit
	bufferedMax int64                    // kgo.MaxBufferedBytes; 0: none
}

// NewClient makes a client of brokers; opts are extra franz-go options
// (TLS, SASL, producer settings), also used by the readers it opens. It
// does not connect before the first request. Topics a Publish names are
// created on first use only if the broker allows automatic creation (see
// CreateTopic).
func NewClient(brokers []string, opts ...kgo.Opt) (*Client, error) {
	if len(brokers) == 0 {
		return nil, errors.New("kafka: no brokers")
	}
	cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.SeedBrokers(brokers...))...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	c := &Client{cl: cl, adm: kadm.NewClient(cl)}
	c.batchMax, _ = cl.OptValue(kgo.ProducerBatchMaxBytesFn).(func(string) int32)
	c.bufferedMax, _ = cl.OptValue(kgo.MaxBufferedBytes).(int64)
	if c.batchMax == nil {
		cl.Close()
		return nil, errors.New("kafka: the producer's batch limit (ProducerBatchMaxBytes) is unknown")
	}
	return c, nil
}

// Ping returns nil once a broker answered a metadata request.
func (c *Client) Ping(ctx context.Context) error { return c.cl.Ping(ctx) }

// Close releases the connections.
func (c *Client) Close() { c.cl.Close() }

// Publish produces msgs to topic in order, each with its Key (none when
// empty, so the producer spreads keyless messages), Body and Headers, and
// its ID in the message-id header, and returns once the broker acknowledged
// them all.
//
// A message the producer would refuse alone (larger than its batch limit or
// its MaxBufferedBytes, see publishsize.go) fails the whole call with an
// error wrapping kerr.MessageTooLarge before anything is produced, so a
// refused message never lets a later one of its key through. Other failures
// keep each partition's order: franz-go produces a partition's records in
// order and, when it fails one (the context ends, a retry limit), fails the
// partition's records buffered after it too, so what reached the broker is a
// prefix of each key's messages. A topic's max.message.bytes lower than the
// producer's limit is not known here: the broker refuses such a record's
// whole batch, and a later batch of the same key may pass (see
// docs/outbox.md).
func (c *Client) Publish(ctx context.Context, topic string, msgs ...*consumer.Message) error {
	recs := make([]*kgo.Record, len(msgs))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		if m == nil {
			return fmt.Errorf("kafka: publishing to %s: message %d is nil", topic, i)
		}
		h := m.Headers
		if m.ID != "" {
			h = withHeader(h, consumer.HeaderMessageID, m.ID)
		}
		recs[i] = &kgo.Record{Topic: topic, Value: m.Body, Headers: recordHeaders(h)}
		if m.Key != "" {
			recs[i].Key = []byte(m.Key)
		}
		ids[i] = m.ID
	}
	if err := c.oversized(topic, recs, ids); err != nil {
		return err
	}
	if err := c.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("kafka: publishing to %s: %w", topic, err)
	}
	return nil
}

// CreateTopic creates topic with partitions partitions and replication
// factor replication (0: the broker's defaults) unless it exists; an
// existing topic is left as it is. It returns once every partition of the
// topic has a leader (at most 30 s), so a Publish right after it is not
// refused with UNKNOWN_TOPIC_OR_PARTITION by a broker that has not yet
// learnt of the topic.
func (c *Client) CreateTopic(ctx context.Context, topic string, partitions int32, replication int16) error {
	return c.CreateTopicWithConfigs(ctx, topic, partitions, replication, nil)
}

// CreateTopicWithConfigs is CreateTopic with topic configs (such as
// min.insync.replicas) given to the created topic; nil: the broker's
// defaults. An existing topic is left as it is, configs included.
func (c *Client) CreateTopicWithConfigs(ctx context.Context, topic string, partitions int32, replication int16, configs map[string]*string) error {
	if partitions == 0 {
		partitions = -1
	}
	if replication == 0 {
		replication = -1
	}
	resp, err := c.adm.CreateTopic(ctx, partitions, replication, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka: creating topic %s: %w %s", topic, err, resp.ErrMessage)
	}
	if err := waitReady(ctx, c.cl, []string{topic}); err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	return nil
}

// Backlog reports group's lag on topic and its retry topics, and the depth
// of its dead-letter topic, as Source.Backlog does, without joining the
// group. For a group that has not committed yet every retained record is
// lag (and Backlog.NeverCommitted is set), and a dead-letter topic not yet
// created has depth 0. A topic that does not exist is ErrNoTopic.
func (c *Client) Backlog(ctx context.Context, topic, group string) ([]consumer.Backlog, error) {
	all, err := c.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing topics: %w", err)
	}
	if _, ok := all[topic]; !ok {
		return nil, fmt.Errorf("kafka: %w: %s", ErrNoTopic, topic)
	}
	consumed := []string{topic}
	prefix := retryTopicPrefix(topic, group)
	for _, t := range all.Names() {
		if tier, ok := strings.CutPrefix(t, prefix); ok && !strings.Contains(tier, ".") {
			consumed = append(consumed, t)
		}
	}
	return backlog(ctx, c.adm, topic, group, consumed)
}
