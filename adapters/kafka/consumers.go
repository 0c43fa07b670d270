package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HasGroup reports whether group consumed topic: its dead-letter topic of
// topic exists (every Source creates it at start) or it committed an offset
// on topic. It returns ErrNoTopic when topic does not exist. It asks the
// brokers each time, never a cache: a group whose Source has started is
// found however long this Client has lived.
func (c *Client) HasGroup(ctx context.Context, topic, group string) (bool, error) {
	dlq := DeadLetterTopic(topic, group)
	md, err := c.topics(ctx)
	if err != nil {
		return false, err
	}
	if _, ok := md[topic]; !ok {
		return false, fmt.Errorf("%w: %s", ErrNoTopic, topic)
	}
	if _, ok := md[dlq]; ok {
		return true, nil
	}
	committed, err := c.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kafka: fetching committed offsets of %s: %w", group, err)
	}
	return committedOn(committed, topic), nil
}

// Groups returns the groups that consumed topic, unsorted: those with a
// dead-letter topic of topic (DeadLetterTopicGroup) and those that
// committed offsets on topic. It returns ErrNoTopic when topic does not
// exist. Like HasGroup, it asks the brokers, never a cache.
func (c *Client) Groups(ctx context.Context, topic string) ([]string, error) {
	md, err := c.topics(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := md[topic]; !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoTopic, topic)
	}
	var out []string
	for name := range md {
		if g, ok := DeadLetterTopicGroup(topic, name); ok {
			out = append(out, g)
		}
	}
	listed, err := c.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing groups: %w", err)
	}
	for g, r := range c.adm.FetchManyOffsets(ctx, listed.Groups()...) {
		if r.Err == nil && committedOn(r.Fetched, topic) {
			out = append(out, g)
		}
	}
	return out, nil
}

// topics returns the names of the topics the brokers list now. It sends
// its own metadata request rather than kadm's ListTopics, which answers
// from the client's metadata cache (up to kgo's MetadataMinAge, 5 s, old)
// and so misses a dead-letter topic a Source created since. The request
// names no topic: a broker with auto.create.topics.enable creates a topic a
// metadata request names, which would make a consumer exist by looking it
// up. Topics the brokers answer with an error (not authorized) are left out.
func (c *Client) topics(ctx context.Context) (map[string]struct{}, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.cl) // Topics nil: every topic
	if err != nil {
		return nil, fmt.Errorf("kafka: listing topics: %w", err)
	}
	out := make(map[string]struct{}, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			out[*t.Topic] = struct{}{}
		}
	}
	return out, nil
}

// committedOn reports whether offsets hold a committed offset on topic.
func committedOn(offsets kadm.OffsetResponses, topic string) bool {
	for _, o := range offsets[topic] {
		if o.Err == nil && o.At >= 0 {
			return true
		}
	}
	return false
}
