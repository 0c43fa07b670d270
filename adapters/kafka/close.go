package kafka

import (
	"context"
	"fmt"
)

// Close stops intake, commits every settled offset of the partitions still
// owned, and leaves the group (CloseAllowingRebalance; with static
// membership the member stays registered until its session times out).
// Unsettled records are not committed, so the group's next member gets them
// at once (after the rebalance the leave triggers), Attempt unchanged; a
// Receive outstanding at Close returns consumer.ErrSourceClosed and hands out
// nothing fetched afterwards. Running hops end with the partitions' leases.
// Close is idempotent.
func (s *Source) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.close(ctx, true) })
	return s.closeErr
}

func (s *Source) close(ctx context.Context, commit bool) error {
	s.closed.Store(true)
	close(s.stop)
	<-s.stopped
	if s.tierScanDone != nil {
		<-s.tierScanDone
	}
	s.mu.Lock()
	s.closing = true
	s.wakeLocked()
	s.mu.Unlock()
	var err error
	if commit {
		cctx, cancel := context.WithTimeout(ctx, closeCommitTimeout)
		err = s.commitOwned(cctx, true)
		cancel()
	}
	s.commitMu.Lock()
	s.mu.Lock()
	for k, p := range s.parts {
		s.disownLocked(k, p)
	}
	s.mu.Unlock()
	s.commitMu.Unlock()
	if s.tiersTimer != nil {
		s.tiersTimer.Stop()
	}
	s.closeClient()
	s.hops.Wait()
	s.wake()
	if err != nil {
		return fmt.Errorf("kafka: final commit: %w", err)
	}
	return nil
}

// disownLocked forgets a partition: its deliveries lose their lease, its
// held records are dropped and its pause state is cleared (pause state
// survives rebalances in franz-go, so a partition paused here would stay
// silent if it came back).
func (s *Source) disownLocked(k tp, p *partition) {
	if !p.owned {
		return
	}
	p.owned = false
	p.cancelLease() // and with it every delivery's own lease (RetryInPlace)
	if p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
	if p.pausedWait || p.pausedFull {
		p.pausedWait, p.pausedFull = false, false
	}
	s.cl.ResumeFetchPartitions(map[string][]int32{k.topic: {k.partition}})
	delete(s.parts, k)
	if p.isHeld {
		p.isHeld = false
		for i, h := range s.held {
			if h == p {
				s.held = append(s.held[:i], s.held[i+1:]...)
				break
			}
		}
	}
}
