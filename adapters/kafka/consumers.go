package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// HasGroup reports whether group consumed topic: its dead-letter topic of
// topic exists (every Source creates it at start) or it committed an offset
// on topic. It returns ErrNoTopic when topic does not exist. The client
// answers metadata from a cache up to kgo's MetadataMinAge (5s) old, so a
// group whose Source started within that time may not be seen yet.
func (c *Client) HasGroup(ctx context.Context, topic, group string) (bool, error) {
	dlq := DeadLetterTopic(topic, group)
	// Every topic, none by name: a broker with auto.create.topics.enable
	// creates a topic a metadata request names (kadm asks for that), which
	// would make the consumer exist by looking it up.
	md, err := c.adm.ListTopics(ctx)
	if err != nil {
		return false, fmt.Errorf("kafka: listing topics: %w", err)
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
// exist.
func (c *Client) Groups(ctx context.Context, topic string) ([]string, error) {
	md, err := c.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing topics: %w", err)
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

// committedOn reports whether offsets hold a committed offset on topic.
func committedOn(offsets kadm.OffsetResponses, topic string) bool {
	for _, o := range offsets[topic] {
		if o.Err == nil && o.At >= 0 {
			return true
		}
	}
	return false
}
