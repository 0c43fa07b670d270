package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// onAssigned starts tracking newly assigned partitions.
func (s *Source) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range assigned {
		for _, p := range ps {
			k := tp{topic, p}
			if s.parts[k] == nil {
				s.newPartitionLocked(k)
			}
		}
	}
	s.log.Info("partitions assigned", "assigned", assigned)
}

// onRevoked waits up to RevokeTimeout for the revoked partitions' deliveries
// to settle, commits what settled, and forgets the partitions.
func (s *Source) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if len(revoked) == 0 {
		return
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	var waits []chan struct{}
	for topic, ps := range revoked {
		for _, n := range ps {
			p := s.parts[tp{topic, n}]
			if p == nil || s.closing {
				continue
			}
			if p.inflight > 0 {
				if p.drained == nil {
					p.drained = make(chan struct{})
				}
				waits = append(waits, p.drained)
			}
		}
	}
	s.mu.Unlock()

	timer := time.NewTimer(s.cfg.RevokeTimeout)
	defer timer.Stop()
wait:
	for _, ch := range waits {
		select {
		case <-ch:
		case <-timer.C:
			s.log.Warn("revoke: deliveries did not settle in time; they will be redelivered to the new owner", "timeout", s.cfg.RevokeTimeout.String())
			break wait
		case <-ctx.Done():
			break wait
		}
	}

	s.mu.Lock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for topic, ps := range revoked {
		for _, n := range ps {
			k := tp{topic, n}
			p := s.parts[k]
			if p == nil {
				continue
			}
			if eo, ok := p.commitPoint(); ok {
				if offsets[topic] == nil {
					offsets[topic] = map[int32]kgo.EpochOffset{}
				}
				offsets[topic][n] = eo
			}
			s.disownLocked(k, p)
		}
	}
	s.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RevokeTimeout)
	defer cancel()
	if err := s.commit(cctx, offsets, nil); err != nil {
		s.log.Warn("revoke: commit failed; records after the last commit will be redelivered", "error", err)
	}
	s.log.Info("partitions revoked", "revoked", revoked)
}

// onLost forgets lost partitions at once: their deliveries report Lost, and
// nothing is committed for them (the member no longer owns them).
func (s *Source) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range lost {
		for _, n := range ps {
			k := tp{topic, n}
			if p := s.parts[k]; p != nil {
				s.disownLocked(k, p)
			}
		}
	}
	if len(lost) > 0 {
		s.log.Info("partitions lost; their unsettled records will be redelivered", "lost", lost)
	}
}

func (s *Source) commitLoop() {
	defer close(s.stopped)
	t := time.NewTicker(s.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(s.cfg.CommitInterval, 10*time.Second))
			if err := s.commitOwned(ctx, false); err != nil {
				s.log.Warn("periodic commit failed; it is retried next interval", "error", err)
			}
			cancel()
		}
	}
}

// commitOwned commits the settled offsets of every owned partition.
func (s *Source) commitOwned(ctx context.Context, final bool) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	parts := map[tp]*partition{}
	for k, p := range s.parts {
		if eo, ok := p.commitPoint(); ok {
			if offsets[k.topic] == nil {
				offsets[k.topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[k.topic][k.partition] = eo
			parts[k] = p
		}
	}
	s.mu.Unlock()
	if final && len(offsets) > 0 {
		s.log.Debug("final commit", "offsets", offsets)
	}
	return s.commit(ctx, offsets, parts)
}

// commit commits offsets synchronously and records them as committed in
// parts. Errors a member gets after losing its partitions (illegal
// generation, unknown member, rebalance in progress) are logged as expected
// and not returned: the next owner redelivers, and dedupe absorbs it.
func (s *Source) commit(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset, parts map[tp]*partition) error {
	if len(offsets) == 0 {
		return nil
	}
	var rerr error
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			rerr = err
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil {
					if rerr == nil {
						rerr = perr
					}
					continue
				}
				k := tp{t.Topic, rp.Partition}
				if p := s.parts[k]; p != nil && (parts == nil || parts[k] == p) {
					if eo := offsets[t.Topic][rp.Partition]; eo.Offset > p.committed {
						p.committed = eo.Offset
					}
				}
			}
		}
	})
	if expectedCommitError(rerr) {
		s.log.Info("commit rejected after a rebalance or loss (expected); uncommitted records will be redelivered", "error", rerr)
		return nil
	}
	return rerr
}

func expectedCommitError(err error) bool {
	return errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.UnknownMemberID) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID) || errors.Is(err, kerr.StaleMemberEpoch)
}
