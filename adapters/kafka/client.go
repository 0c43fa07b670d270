package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// Client is a Kafka connection for the work around a consumer: publishing
// messages the way a Source reads them, reporting a group's backlog without
// joining it, and reading dead letters. It does not join any group. Its
// methods are safe for concurrent use.
type Client struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// NewClient connects to brokers; opts are extra franz-go options (TLS,
// SASL). Topics a Publish names are created on first use only if the
// broker allows automatic creation.
func NewClient(brokers []string, opts ...kgo.Opt) (*Client, error) {
	if len(brokers) == 0 {
		return nil, errors.New("kafka: no brokers")
	}
	cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.SeedBrokers(brokers...))...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &Client{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close releases the connections.
func (c *Client) Close() { c.cl.Close() }

// Publish produces msgs to topic in order, each with its Key, Body and
// Headers, and its ID in the message-id header, and returns once the broker
// acknowledged them all.
func (c *Client) Publish(ctx context.Context, topic string, msgs ...*consumer.Message) error {
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		h := m.Headers
		if m.ID != "" {
			h = withHeader(h, consumer.HeaderMessageID, m.ID)
		}
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(m.Key), Value: m.Body, Headers: recordHeaders(h)}
	}
	if err := c.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("kafka: publishing to %s: %w", topic, err)
	}
	return nil
}

// Backlog reports group's lag on topic and its retry topics, and the depth
// of its dead-letter topic, as Source.Backlog does, without joining the
// group. For a group that has not committed yet every retained record is
// lag, and a dead-letter topic not yet created has depth 0.
func (c *Client) Backlog(ctx context.Context, topic, group string) ([]consumer.Backlog, error) {
	all, err := c.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing topics: %w", err)
	}
	if _, ok := all[topic]; !ok {
		return nil, fmt.Errorf("kafka: topic %q does not exist", topic)
	}
	consumed := []string{topic}
	prefix := topic + "." + group + ".retry."
	for _, t := range all.Names() {
		if strings.HasPrefix(t, prefix) {
			consumed = append(consumed, t)
		}
	}
	return backlog(ctx, c.adm, topic, group, consumed)
}

// DeadLetters reads up to limit records (all when limit <= 0) of the
// dead-letter topic of topic and group, partition by partition in offset
// order, without consuming them. Message.Source is the dead-letter topic;
// the failure context is in the oncely- headers.
func (c *Client) DeadLetters(ctx context.Context, topic, group string, limit int) ([]*consumer.Message, error) {
	dlq := DeadLetterTopic(topic, group)
	starts, err := c.adm.ListStartOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: start offsets of %s: %w", dlq, err)
	}
	ends, err := c.adm.ListEndOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: end offsets of %s: %w", dlq, err)
	}
	want := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	var lerr error
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			lerr = errors.Join(lerr, fmt.Errorf("kafka: end offset of %s[%d]: %w", e.Topic, e.Partition, e.Err))
			return
		}
		st, ok := starts.Lookup(e.Topic, e.Partition)
		if ok && st.Err == nil && st.Offset < e.Offset {
			want[e.Partition] = e.Offset
			from[e.Partition] = kgo.NewOffset().At(st.Offset)
		}
	})
	if lerr != nil {
		return nil, lerr
	}
	if len(want) == 0 {
		return nil, nil
	}
	rd, err := kgo.NewClient(append(slices.Clone(c.cl.Opts()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{dlq: from}))...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	defer rd.Close()
	src := &Source{cfg: Config{IDHeaders: []string{consumer.HeaderMessageID, HeaderCloudEventsID}}}
	byPart := map[int32][]*consumer.Message{}
	n := 0
	for len(want) > 0 && (limit <= 0 || n < limit) {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("kafka: reading %s[%d]: %w", t, p, err))
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			byPart[r.Partition] = append(byPart[r.Partition], src.message(r, nil))
			n++
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var out []*consumer.Message
	for _, p := range parts {
		out = append(out, byPart[p]...)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
