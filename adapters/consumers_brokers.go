package adapters

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/adapters/redis"
	"github.com/oncely/oncely/adapters/sqs"
)

// This file holds what each queue broker knows of the consumer names of a
// source (consumerIndex); Kafka's and memory's are in their open_ files.

// Consumers returns ErrConsumersUnlisted: AMQP cannot list queues.
func (r *rabbitBroker) Consumers(ctx context.Context, source string) ([]string, error) {
	n, err := r.depth(ctx, source)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, noSource("rabbitmq queue", source)
	}
	return nil, fmt.Errorf("rabbitmq: consumers of %s: %w (AMQP has no queue listing; a passive declare checks one name)", source, ErrConsumersUnlisted)
}

// hasConsumer is true when the consumer's dead-letter queue exists (every
// Source declares it at start), asked with a passive declare.
func (r *rabbitBroker) hasConsumer(ctx context.Context, source, consumerName string) (bool, error) {
	n, err := r.depth(ctx, r.dlq(source, consumerName))
	return n >= 0, err
}

// Consumers lists the consumers whose dead-letter queue has the default
// name (sqs.DeadLetterQueueName); with the dlq= parameter
// the consumer name does not choose the queue and none is listed.
func (s *sqsBroker) Consumers(ctx context.Context, source string) ([]string, error) {
	surl, err := s.queueURL(ctx, source, false)
	if err != nil {
		return nil, err
	}
	if surl == "" {
		return nil, noSource("sqs queue", source)
	}
	out := []string{}
	p := awssqs.NewListQueuesPaginator(s.client, &awssqs.ListQueuesInput{QueueNamePrefix: aws.String(sqs.DeadLetterQueuePrefix(source)), MaxResults: aws.Int32(1000)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("sqs: listing the queues of %s: %w", source, err)
		}
		for _, u := range page.QueueUrls {
			if c, ok := sqs.DeadLetterQueueConsumer(source, path.Base(u)); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// hasConsumer is true when the consumer's dead-letter queue exists (every
// Source creates it at start), and always with the dlq= parameter, where
// the consumer name does not choose the queue.
func (s *sqsBroker) hasConsumer(ctx context.Context, source, consumerName string) (bool, error) {
	if s.cfg.DeadLetterQueueName != "" {
		return true, nil
	}
	name, err := s.deadLetterQueue(source, consumerName)
	if err != nil {
		return false, err
	}
	u, err := s.queueURL(ctx, name, false)
	return u != "", err
}

// Consumers lists the durable consumers of the source's stream, a
// ReplayMarker under the name of the consumer it stands for.
func (n *natsBroker) Consumers(ctx context.Context, source string) ([]string, error) {
	if err := n.sourceExists(ctx, source); err != nil {
		return nil, err
	}
	st, err := n.js.Stream(ctx, nats.StreamName(source))
	if err != nil {
		return nil, fmt.Errorf("nats: looking up the stream of %s: %w", source, err)
	}
	names := st.ConsumerNames(ctx)
	out := []string{}
	for name := range names.Name() {
		if c, ok := strings.CutSuffix(name, nats.ReplayMarker("")); ok {
			name = c
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("nats: listing the consumers of %s: %w", source, err)
	}
	return out, nil
}

// hasConsumer is true when the durable consumer exists on the source's
// stream or its dead-letter stream exists (the durable can be deleted by
// hand; its dead letters stay), or a ReplayMarker stands for it.
func (n *natsBroker) hasConsumer(ctx context.Context, source, consumerName string) (bool, error) {
	_, err := n.js.Consumer(ctx, nats.StreamName(source), consumerName)
	if errors.Is(err, jetstream.ErrConsumerNotFound) { // a replay recreating it was interrupted
		_, err = n.js.Consumer(ctx, nats.StreamName(source), nats.ReplayMarker(consumerName))
	}
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrInvalidConsumerName) {
		return false, fmt.Errorf("nats: looking up consumer %s of %s: %w", consumerName, source, err)
	}
	_, err = n.js.Stream(ctx, nats.StreamName(nats.DeadLetterSubject(source, consumerName)))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Consumers lists the consumer groups of the source stream (XINFO GROUPS).
func (r *redisBroker) Consumers(ctx context.Context, source string) ([]string, error) {
	if err := r.sourceExists(ctx, source); err != nil {
		return nil, err
	}
	groups, err := r.client.XInfoGroups(ctx, source).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: listing the groups of %s: %w", source, err)
	}
	out := []string{}
	for _, g := range groups {
		out = append(out, g.Name)
	}
	return out, nil
}

// hasConsumer is true when the consumer's group exists on the source stream
// or its dead-letter stream exists (a group can be destroyed by hand; its
// dead letters stay).
func (r *redisBroker) hasConsumer(ctx context.Context, source, consumerName string) (bool, error) {
	groups, err := r.Consumers(ctx, source)
	if err != nil {
		return false, err
	}
	if slices.Contains(groups, consumerName) {
		return true, nil
	}
	n, err := r.client.Exists(ctx, redis.DeadLetterStream(source, consumerName)).Result()
	if err != nil {
		return false, fmt.Errorf("redis: looking up the dead letters of %s: %w", consumerName, err)
	}
	return n > 0, nil
}
