package kafka

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// followRecreated moves the Source to the new instance of each consumed
// topic the broker no longer knows by the ID the client holds (the topic
// was deleted, and perhaps created again under a new ID). The client,
// which would otherwise refuse the new instance for good, forgets the old
// one (kgo.Client.PurgeTopicsFromClient) and subscribes to the name again
// (AddConsumeTopics): the group is assigned the new topic's partitions and
// consumes them from their start (no offset is committed for them). The
// old partitions' tracked records are dropped and their deliveries lose
// their lease: those records were deleted with their topic, and no offset
// of theirs is committed onto the new one.
//
// A lost topic often comes with others (a broker that restarted empty):
// unless SkipTopicCreation is set, the retry and dead-letter topics that
// are missing too (and the source topic, if it is still missing) are
// created again first, as New creates them, and the retry topics among
// them followed with the rest, so copies and their consumption resume
// without waiting for each to fail on its own.
func (s *Source) followRecreated(topics []string) {
	if len(topics) == 0 {
		return
	}
	topics = append(topics, s.recreateMissing()...)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	s.mu.Lock()
	for k, p := range s.parts {
		if slices.Contains(topics, k.topic) {
			s.disownLocked(k, p)
		}
	}
	s.mu.Unlock()
	for _, t := range topics {
		s.log.Warn(recreatedLog, "recreated_topic", t)
	}
	s.cl.PurgeTopicsFromClient(topics...)
	s.cl.AddConsumeTopics(topics...)
}

// recreatedLog is the warning followRecreated logs for each topic.
const recreatedLog = "consumed topic deleted or recreated: following its new instance from the start; records of the old one not yet committed went with it"

// recreateMissing creates the Source's retry and dead-letter topics that
// the broker does not have, and returns the consumed ones among them. It
// does nothing with SkipTopicCreation; a failure is logged (a copy to a
// topic still missing creates it again, see copy.go).
func (s *Source) recreateMissing() []string {
	if s.cfg.SkipTopicCreation {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts := s.tiers.Load()
	all := append(slices.Clone(ts.topics), s.dlq)
	md, err := kadm.NewClient(s.cl).ListTopics(ctx, all...)
	var missing []string
	configs := map[string]map[string]*string{}
	for _, t := range all {
		if err == nil && md.Has(t) && md[t].Err == nil {
			continue
		}
		missing = append(missing, t)
		if d, ok := ts.tierOf[t]; ok {
			configs[t] = tierTopicConfig(d)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := ensureTopics(ctx, s.cl, append([]string{s.cfg.Topic}, missing...), configs, s.cfg.creation(), false); err != nil {
		s.log.Warn("could not create the missing retry and dead-letter topics again", "topics", missing, "error", err)
		return nil
	}
	s.cl.PurgeTopicsFromProducing(missing...)
	return slices.DeleteFunc(missing, func(t string) bool { return t == s.dlq })
}
