package kafka

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Every replica of a group consumes every retry tier of its (topic, group)
// pair, whichever replica created it.
//
// A replica whose policy reaches further creates further tiers at its first
// Receive (see tiers.go). A replica started before that does not know them
// from New, and the group assigns a topic's partitions only to members
// subscribed to it: once the replica that created a tier left (Close or a
// crash), the retries waiting in it would wait until some replica started
// again. So a Source lists the cluster's topics every tierScanInterval and
// consumes every retry topic of its pair it does not consume yet; the
// group's next rebalance assigns it. A record of such a tier is handled as
// any other: due at its oncely-retry-not-before header, its Attempt from
// oncely-attempt, hopping after the delay its topic's name gives (see
// hop.go); a further retry goes to the Source's own tiers, as the handler's
// policy asks. A tier created by another replica is so consumed within
// tierScanInterval plus a rebalance of its creation.

// tierScanInterval is how often a Source looks for retry topics of its
// (topic, group) created by other replicas.
const tierScanInterval = 10 * time.Second

// scanTiersLoop consumes the retry topics other replicas create, every
// tierScanInterval, until the Source closes.
func (s *Source) scanTiersLoop() {
	defer close(s.tierScanDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	t := time.NewTicker(tierScanInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.consumeNewTiers(ctx)
		}
	}
}

// consumeNewTiers starts consuming the retry topics of (Topic, Group) on
// the cluster that the Source does not consume yet. A failure to list them
// is logged; the next scan tries again.
func (s *Source) consumeNewTiers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, tierScanInterval)
	defer cancel()
	found, err := existingTiers(ctx, s.adm, s.cfg.Topic, s.cfg.Group)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("could not list the retry topics other replicas created; trying again later", "error", err)
		}
		return
	}
	_, added := s.tiers.Load().consuming(found)
	if len(added) == 0 {
		return
	}
	limits := s.tierLimits(ctx, added) // before the lock: Receive takes it
	s.tierMu.Lock()
	defer s.tierMu.Unlock()
	ts, added := s.tiers.Load().consuming(found) // ensureTiers may have added some meanwhile
	if len(added) == 0 {
		return
	}
	s.log.Info("consuming retry topics another replica of the group created", "tier_topics", added)
	s.consumeTiersLocked(ts, added, limits)
}

// consuming returns ts with the retry topics of found it does not consume
// added to the consumed ones (not to own: Retry still produces only to
// the tiers this Source created), and those topics.
func (ts *tierSet) consuming(found *tierSet) (*tierSet, []string) {
	var added []string
	for _, t := range found.topics {
		if _, ok := ts.tierOf[t]; !ok {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return ts, nil
	}
	next := &tierSet{topics: append(slices.Clone(ts.topics), added...), tierOf: maps.Clone(ts.tierOf), own: ts.own, byTier: ts.byTier}
	for _, t := range added {
		next.tierOf[t] = found.tierOf[t]
	}
	slices.SortFunc(next.topics, func(a, b string) int { return int(next.tierOf[a] - next.tierOf[b]) })
	return next, added
}
