package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// Copies too large for the broker.
//
// A retry or dead-letter copy carries the record's key and value plus the
// failure headers, so a record near the size limit can have a copy the
// broker refuses for good (MESSAGE_TOO_LARGE). Before producing a copy, the
// Source fits it (consumer.FitCopy) to the smaller of the producer's batch
// limit (kgo.ProducerBatchMaxBytes) and the destination topic's
// max.message.bytes, described once in New: drop the stack header, cut the
// error header, then, for a dead letter only, replace the body by the
// oncely-body-removed-size and -sha256 markers. The client's batch limit
// per copy topic is lowered to the same limit, so copies batched together
// never exceed the topic's limit either. Should the broker refuse a copy as
// too large anyway (a limit lowered since, or not describable), the copy is
// shrunk one step further and produced again until it is accepted, at most
// three times; a dead letter always ends with its body removed at the latest.
// A retry copy that cannot fit is refused with an error wrapping
// consumer.ErrCopyRefused (the runtime dead-letters the message). Every
// trimmed copy is logged and reported by CopyTrimmed.
//
// A copy topic the broker no longer has (deleted, or lost with a broker
// that restarted empty) is created again as New creates it, unless
// SkipTopicCreation is set, and the copy produced once more; the original
// stays unsettled until a copy is stored.

// Kafka's record batch v2 framing, as a broker counts a batch against
// max.message.bytes, for a batch of one record: the batch header, the
// record's fixed fields with their varints at full width (length,
// attributes, timestamp delta, offset delta, key and value lengths, header
// count), and per header its two length varints. Counting every varint at
// its widest keeps the estimate conservative.
const (
	batchOverhead  = 61
	recordOverhead = 5 + 1 + 10 + 5 + 5 + 5 + 5
	headerOverhead = 5 + 5
)

// copySize measures a copy with a key of keyLen bytes as a one-record
// batch.
func copySize(keyLen int) consumer.CopySize {
	return func(body []byte, headers map[string]string) int {
		n := batchOverhead + recordOverhead + keyLen + len(body)
		for k, v := range headers {
			n += headerOverhead + len(k) + len(v)
		}
		return n
	}
}

// minBatchBytes is franz-go's smallest accepted batch limit.
const minBatchBytes = 512

// copyLimits describes the max.message.bytes of the copy topics. A topic it
// could not describe is left out (its limit is then the producer's alone,
// and a refusal by the broker shrinks the copy, see above); the error says
// why.
func copyLimits(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int32, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	out := make(map[string]int32, len(topics))
	for _, rc := range rcs {
		if rc.Err != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", rc.Name, rc.Err))
			continue
		}
		for _, c := range rc.Configs {
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			n, perr := strconv.ParseInt(*c.Value, 10, 32)
			if perr != nil || n <= 0 {
				err = errors.Join(err, fmt.Errorf("%s: max.message.bytes %q", rc.Name, *c.Value))
				continue
			}
			out[rc.Name] = int32(n)
		}
	}
	return out, err
}

// batchLimit is the producer's batch limit for topic: the configured one,
// lowered to the topic's max.message.bytes when known.
func (s *Source) batchLimit(topic string) int32 {
	n := s.producerMax(topic)
	if l, ok := (*s.topicMax.Load())[topic]; ok && l < n {
		n = max(l, minBatchBytes)
	}
	return n
}

// tooLarge reports a copy the broker (or the client, before sending) refused
// for its size.
func tooLarge(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)
}

// maxShrinks bounds how often a copy refused as too large is shrunk and
// produced again: each shrink fits the copy under the size just refused, so
// more refusals than this are not about the size FitCopy can fix.
const maxShrinks = 3

// produceCopy fits a copy of d's record with headers into topic's limit and
// produces it, shrinking it after a refusal for size (see above). dead
// allows removing the body. It returns whether the produced copy was
// trimmed.
func (d *delivery) produceCopy(ctx context.Context, topic string, headers map[string]string, dead bool) (trimmed bool, err error) {
	s := d.p.s
	key, body := d.e.rec.Key, d.e.rec.Value
	size := copySize(len(key))
	limit := int(s.batchLimit(topic))
	for shrinks := 0; ; shrinks++ {
		f, ferr := consumer.FitCopy(body, headers, limit, size, dead, s.cfg.IDHeaders...)
		if ferr != nil {
			if err != nil {
				return false, fmt.Errorf("%w (after the broker refused a copy of %d bytes: %w)", ferr, limit+1, err)
			}
			return false, ferr
		}
		rec := &kgo.Record{Topic: topic, Key: key, Value: f.Body, Headers: recordHeaders(f.Headers)}
		err = s.cl.ProduceSync(ctx, rec).FirstErr()
		if topicGone(err) && s.recreateCopyTopic(ctx, topic, err) == nil {
			err = s.cl.ProduceSync(ctx, rec).FirstErr()
		}
		if err == nil {
			if f.Trimmed || f.BodyRemoved {
				s.log.Warn("copy trimmed to fit the broker's size limit", "copy_topic", topic, "id", d.msg.ID,
					"source_topic", d.msg.Source, "partition", d.msg.Partition, "offset", d.msg.Offset,
					"limit", limit, "size", size(body, headers), "body_removed", f.BodyRemoved, "headers_removed", f.HeadersRemoved)
			}
			return f.Trimmed || f.BodyRemoved, nil
		}
		if !tooLarge(err) {
			return false, err
		}
		if shrinks == maxShrinks {
			return false, fmt.Errorf("%w: %w", consumer.ErrCopyRefused, err)
		}
		limit = size(f.Body, f.Headers) - 1
	}
}

// topicGone reports a produce refused because the broker has no such topic
// (or no longer the instance the client knew).
func topicGone(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

// recreateCopyTopic creates topic, a retry or dead-letter topic of the
// Source, again after a produce to it failed with cause, and makes the
// client forget the instance it knew. It does nothing with
// SkipTopicCreation.
func (s *Source) recreateCopyTopic(ctx context.Context, topic string, cause error) error {
	if s.cfg.SkipTopicCreation {
		return cause
	}
	var configs map[string]map[string]*string
	if d, ok := s.tiers.Load().tierOf[topic]; ok {
		configs = map[string]map[string]*string{topic: tierTopicConfig(d)}
	}
	s.log.Warn("copy topic missing; creating it again", "copy_topic", topic, "error", cause)
	s.cl.PurgeTopicsFromProducing(topic)
	// The source first, for its partition count; it is created too if it
	// is missing, as New would.
	if err := ensureTopics(ctx, s.cl, []string{s.cfg.Topic, topic}, configs, s.cfg.creation(), false); err != nil {
		s.log.Warn("could not create the copy topic again", "copy_topic", topic, "error", err)
		return err
	}
	return nil
}
