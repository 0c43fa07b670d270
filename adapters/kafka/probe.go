package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/oncely/oncely/consumer"
)

var _ consumer.Prober = (*Source)(nil)

// ConnectTimeout bounds the first contact with the brokers (New, and
// adapters.Open for kafka:// URLs) when the caller's context has no earlier
// deadline: a broker address that accepts TCP connections but never
// answers, like one that refuses them or does not resolve, fails with an
// error naming the addresses instead of hanging.
const ConnectTimeout = 10 * time.Second

// reach returns nil once one of brokers answered cl, and otherwise an error
// naming brokers, after at most ConnectTimeout.
func reach(ctx context.Context, cl *kgo.Client, brokers []string) error {
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("no Kafka broker answers at %s (waited up to %s): %w", strings.Join(brokers, ","), ConnectTimeout, err)
	}
	return nil
}

// Probe asks the cluster, through the Source's client, for the metadata of
// the source, retry and dead-letter topics (one Metadata request, never
// answered from the client's cache). It fails when no broker answers, or
// when one of those topics or any of their partitions reports an error or
// has no leader: then a produce or commit cannot succeed either, so the
// runtime treats a failed settlement as an outage (hold and retry) rather
// than as the message's failure. Probe touches no record.
func (s *Source) Probe(ctx context.Context) error {
	if err := topicsReady(ctx, s.cl, append(s.consumedTopics(), s.dlq)); err != nil {
		return fmt.Errorf("kafka: probe: %w", err)
	}
	return nil
}

// topicsReady sends one Metadata request for topics through cl (never
// answered from the client's cache) and fails when no broker answers, or
// when a topic or any of its partitions reports an error or has no leader.
func topicsReady(ctx context.Context, cl *kgo.Client, topics []string) error {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", name, err))
			continue
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", name, p.Partition, err))
			} else if p.Leader < 0 {
				errs = append(errs, fmt.Errorf("%s[%d]: no leader", name, p.Partition))
			}
		}
	}
	return errors.Join(errs...)
}
