package kafka

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Retry tiers are created only as far as the consumer's policy reaches.
//
// New consumes, besides the source, every retry topic of its (topic, group)
// pair that already exists, whatever its delay: a tier another
// configuration of the group created (a replica with a longer policy, an
// earlier deployment) is still drained, and so is one created later, which
// a periodic scan finds (see discover.go). It also creates the tiers of
// Config.Tiers the default retry policy reaches (retry.Policy{}.Reach,
// 9.6 s: 1s and 10s of the default tiers), so the group's first assignment
// holds the short tiers: a topic added later is assigned only at the next
// rebalance (up to a heartbeat interval, 5 s, with the consumer protocol),
// which a 1 s retry would wait for. consumer.New tells the Source how far
// its policy reaches (LimitTiers); the first Receive then creates the tiers
// up to the first one not shorter than that (retry.Tiers.Upto; every tier
// when LimitTiers was never called) and consumes them too; their records
// are due later than the tiers created by New. Retry produces only to
// these tiers: a longer delay (a handler's RetryAfter) goes to the largest
// and hops there until due (see hop.go), so it is never early and never
// lost.

var _ consumer.TierLimiter = (*Source)(nil)

// tierSet is the retry topics a Source consumes and produces to. It is
// replaced whole, never changed.
type tierSet struct {
	topics []string                 // consumed retry topics, by delay
	tierOf map[string]time.Duration // the delay of each consumed retry topic
	own    retry.Tiers              // the tiers Retry produces to, created by New and the first Receive
	byTier map[time.Duration]string // the topic of each of own
}

// LimitTiers bounds the retry topics the first Receive creates to the
// tiers a retry after at most longest can use (those New created for the
// default policy stay). It has effect only before the first Receive.
func (s *Source) LimitTiers(longest time.Duration) {
	s.tierMu.Lock()
	defer s.tierMu.Unlock()
	if !s.tiersMade.Load() {
		s.tierLimit, s.tierLimited = longest, true
	}
}

// existingTiers lists the retry topics of (topic, group) on the cluster,
// with their delays read back from their names.
func existingTiers(ctx context.Context, adm *kadm.Client, topic, group string) (*tierSet, error) {
	all, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: listing topics: %w", ErrTopicCreation, err)
	}
	ts := &tierSet{tierOf: map[string]time.Duration{}, byTier: map[time.Duration]string{}}
	prefix := retryTopicPrefix(topic, group)
	for _, t := range all.Names() {
		name, ok := strings.CutPrefix(t, prefix)
		if !ok || strings.Contains(name, ".") {
			continue
		}
		if d, err := time.ParseDuration(name); err == nil && d > 0 && retry.Name(d) == name {
			ts.tierOf[t] = d
			ts.topics = append(ts.topics, t)
		}
	}
	slices.SortFunc(ts.topics, func(a, b string) int { return int(ts.tierOf[a] - ts.tierOf[b]) })
	return ts, nil
}

// consumedTopics are the source topic and the retry topics consumed.
func (s *Source) consumedTopics() []string {
	return append([]string{s.cfg.Topic}, s.tiers.Load().topics...)
}

// with returns ts with tiers added to own, and the retry topics it adds to
// the consumed ones with their topic configurations.
func (ts *tierSet) with(topic, group string, tiers retry.Tiers) (*tierSet, map[string]map[string]*string, []string) {
	next := &tierSet{topics: slices.Clone(ts.topics), tierOf: maps.Clone(ts.tierOf), own: slices.Clone(ts.own), byTier: maps.Clone(ts.byTier)}
	configs := map[string]map[string]*string{}
	var added []string
	for _, d := range tiers {
		t := RetryTopic(topic, group, d)
		configs[t] = tierTopicConfig(d)
		if _, ok := next.byTier[d]; !ok {
			next.byTier[d] = t
			next.own = append(next.own, d)
		}
		if _, ok := next.tierOf[t]; !ok {
			next.tierOf[t] = d
			next.topics = append(next.topics, t)
			added = append(added, t)
		}
	}
	slices.Sort(next.own)
	slices.SortFunc(next.topics, func(a, b string) int { return int(next.tierOf[a] - next.tierOf[b]) })
	return next, configs, added
}

// ensureTiers creates the retry topics up to the limit, once, and consumes
// them (paused like the others until startTiers). On failure the next
// Receive tries again.
func (s *Source) ensureTiers(ctx context.Context) error {
	if s.cfg.RetryMode != RetryTopics || s.tiersMade.Load() {
		return nil
	}
	s.tierMu.Lock()
	defer s.tierMu.Unlock()
	if s.tiersMade.Load() {
		return nil
	}
	want := s.cfg.Tiers
	if s.tierLimited {
		want = want.Upto(s.tierLimit)
	}
	ts, configs, added := s.tiers.Load().with(s.cfg.Topic, s.cfg.Group, want)
	if len(added) > 0 {
		names := append([]string{s.cfg.Topic}, added...) // the source first, for its partition count
		if err := ensureTopics(ctx, s.cl, names, configs, s.cfg.creation(), s.cfg.SkipTopicCreation); err != nil {
			return err
		}
	}
	s.consumeTiersLocked(ts, added, s.tierLimits(ctx, added))
	s.tiersMade.Store(true)
	return nil
}

// tierLimits returns the max.message.bytes of the retry topics, logging a
// failure to describe them (copies are then fitted to the producer's limit).
func (s *Source) tierLimits(ctx context.Context, topics []string) map[string]int32 {
	if len(topics) == 0 {
		return nil
	}
	limits, err := copyLimits(ctx, s.adm, topics)
	if err != nil {
		s.log.Warn("could not describe max.message.bytes of the retry topics; copies are fitted to the producer's limit only", "error", err)
	}
	return limits
}

// consumeTiersLocked makes ts the Source's tiers and starts consuming
// added, its retry topics not consumed yet (paused like the others until
// startTiers), with limits, their max.message.bytes. Called with tierMu
// held.
func (s *Source) consumeTiersLocked(ts *tierSet, added []string, limits map[string]int32) {
	if len(added) > 0 {
		merged := maps.Clone(*s.topicMax.Load())
		maps.Copy(merged, limits)
		s.topicMax.Store(&merged)
		if !s.tiersResumed {
			s.cl.PauseFetchTopics(added...)
		}
	}
	s.tiers.Store(ts)
	s.cl.AddConsumeTopics(added...)
}

// startTiers resumes fetching the retry tiers' topics, once. New pauses
// them (and ensureTiers those it adds before) so that the first fetch holds the source topic's partitions: a first
// fetch holding only the tiers' partitions (often all empty) waits out
// FetchMaxWait, and franz-go sends a broker no other fetch meanwhile, so the
// source topic's first records came one FetchMaxWait late (about one start
// in 30-45 on kfake). The first poll's return, or tierStartDelay, resumes
// them; a tier's record is due no sooner than its tier's delay after it was
// produced anyway. Pausing topics leaves the per-partition pauses of the
// adapter alone.
func (s *Source) startTiers() {
	s.tierMu.Lock()
	defer s.tierMu.Unlock()
	if s.tiersResumed {
		return
	}
	s.tiersResumed = true
	if ts := s.tiers.Load().topics; len(ts) > 0 {
		s.cl.ResumeFetchTopics(ts...)
	}
}
