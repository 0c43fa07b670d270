package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Hopping keeps one far-future retry from blocking a tier.
//
// A retry tier's partition is consumed in offset order, and a record is not
// delivered before its oncely-retry-not-before time. A record whose delay
// exceeds its tier's (a delay beyond the longest tier, or a not-before
// header set by hand) would hold every record behind it until it is due: a
// 13 h retry in the 1 h tier held the tier partition for 13 h. Instead, a
// record still not due once its tier's delay passed since it was produced
// hops: it is produced again, unchanged (same key, value and headers), to
// the end of the same tier topic, and once the broker acknowledged the copy
// its own offset counts as settled (committed like any settled record). So
// a record ahead holds the ones behind it only until the later of its
// tier's delay after it was produced and min(delay, hopFloor) after it was
// fetched (see hopTime), plus fetch latency; a far-future record hops about
// delay/tier times in all.
//
// Guarantees: a record is settled only after its copy was acknowledged, so
// a crash or a revoke mid-hop redelivers the record, and at worst leaves a
// second copy with the same message ID (the idempotency claim absorbs it).
// A failed hop is produced again with a backoff (hopRetryMin to
// hopRetryMax) for as long as the partition is owned; meanwhile the records
// behind it flow, and only the commit waits. Since every hop produces anew,
// a tier topic's retention only needs to exceed its tier's delay plus the
// consumer's lag, whatever the retry's delay.

// hopFloor bounds how soon after it was fetched a record hops, for tiers
// longer than hopFloor: a record whose timestamp lies far in the past (a
// backlog, or a broker clock behind ours with LogAppendTime) hops at once,
// but no record hops more often than once per hopFloor.
const hopFloor = time.Second

// Backoff of a hop whose produce failed.
const (
	hopRetryMin = 100 * time.Millisecond
	hopRetryMax = 10 * time.Second
)

// hopTime returns when a record of a tier with the given delay, produced at
// ts and fetched at now, hops if it is not due by then: its tier's delay
// after it was produced (after now, if ts lies ahead of now), and no sooner
// than min(delay, hopFloor) after now.
func hopTime(ts, now time.Time, delay time.Duration) time.Time {
	at := ts
	if at.IsZero() || at.After(now) {
		at = now
	}
	return maxTime(at.Add(delay), now.Add(min(delay, hopFloor)))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// startHop starts hopping e, an entry of p now in state hopping. Called
// with s.mu held.
func (s *Source) startHop(p *partition, e *entry) {
	s.hops.Add(1)
	go s.hop(p, e)
}

// hop produces a copy of e's record to the end of its topic, retrying with
// a backoff until the broker acknowledges it or p's lease ends, and then
// settles e.
func (s *Source) hop(p *partition, e *entry) {
	defer s.hops.Done()
	wait := hopRetryMin
	for {
		r := &kgo.Record{Topic: e.rec.Topic, Key: e.rec.Key, Value: e.rec.Value, Headers: e.rec.Headers}
		err := s.cl.ProduceSync(p.lease, r).FirstErr()
		if err == nil {
			s.mu.Lock()
			if p.owned && e.state == hopping {
				s.settleLocked(p, e)
			}
			s.mu.Unlock()
			return
		}
		if p.lease.Err() != nil {
			return // revoked, lost or closed: the next owner hops it again
		}
		s.log.Warn("retry tier: a record not yet due could not be re-published; retrying (its offset stays uncommitted)",
			"tier_topic", e.rec.Topic, "partition", e.rec.Partition, "offset", e.rec.Offset, "retry_in", wait.String(), "error", err)
		t := time.NewTimer(wait)
		select {
		case <-p.lease.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, hopRetryMax)
	}
}
