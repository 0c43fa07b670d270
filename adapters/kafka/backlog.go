package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/oncely/oncely/consumer"
)

var _ consumer.BacklogReporter = (*Source)(nil)

// Backlog reports the group's lag per partition of the source and retry
// topics: the end offset minus the committed offset (minus the start offset
// where nothing was committed yet). One more row, with Partition -1 and Lag
// 0, carries the dead-letter topic's depth in DeadLetters: its records not
// yet removed by a redrive or purge (see RedriveGroup); the partition rows
// have DeadLetters -1.
func (s *Source) Backlog(ctx context.Context) ([]consumer.Backlog, error) {
	return backlog(ctx, s.adm, s.cfg.Topic, s.cfg.Group, s.consumedTopics())
}

// backlog computes Backlog for group over consumed (the source topic first)
// and the dead-letter topic of topic and group.
func backlog(ctx context.Context, adm *kadm.Client, topic, group string, consumed []string) ([]consumer.Backlog, error) {
	dlq := DeadLetterTopic(topic, group)
	topics := append(slices.Clone(consumed), dlq)
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing end offsets: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing start offsets: %w", err)
	}
	rms, err := fetchRemovals(ctx, adm, dlq)
	if err != nil {
		return nil, err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		// A group that has not joined or committed yet: every retained
		// record is lag.
		committed, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: fetching committed offsets of %s: %w", group, err)
	}
	var out []consumer.Backlog
	var depth int64
	var ferr error
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			if end.Topic == dlq && errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
				return // no Source of the group has started yet: nothing dead-lettered
			}
			if ferr == nil {
				ferr = fmt.Errorf("kafka: end offset of %s[%d]: %w", end.Topic, end.Partition, end.Err)
			}
			return
		}
		base := int64(0)
		if st, ok := starts.Lookup(end.Topic, end.Partition); ok && st.Err == nil {
			base = st.Offset
		}
		if end.Topic == dlq {
			depth += rms[end.Partition].left(base, end.Offset)
			return
		}
		never := true
		if c, ok := committed.Lookup(end.Topic, end.Partition); ok && c.Err == nil && c.At >= 0 {
			base, never = c.At, false
		}
		out = append(out, consumer.Backlog{Source: end.Topic, Partition: end.Partition, Lag: max(0, end.Offset-base), DeadLetters: -1, NeverCommitted: never})
	})
	if ferr != nil {
		return nil, ferr
	}
	slices.SortFunc(out, func(a, b consumer.Backlog) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	out = append(out, consumer.Backlog{Source: topic, Partition: -1, DeadLetters: depth})
	return out, nil
}
