package kafka

import "time"

// leaveTimeout bounds how long Close waits for the client to leave the group
// before it interrupts a JoinGroup in flight.
const leaveTimeout = 5 * time.Second

// closeClient leaves the group (a dynamic member sends LeaveGroup) and closes
// the client. franz-go lets a JoinGroup in flight finish before it leaves, and
// a broker answers that join only when the rebalance completes: after a
// member crashed, when the dead member's session times out (45s by default).
// A SIGTERM during that wait would outlast a deployment's grace period and end
// in a SIGKILL, adding one more dead member. So after leaveTimeout the
// client's context is cancelled: the join fails at once
// and the client closes without a LeaveGroup. Close has given up every
// partition before it calls this (nothing is owned during a join), so no
// settled offset is left uncommitted; the member that never completed its
// join stays in the group until its session times out.
func (s *Source) closeClient() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.cl.CloseAllowingRebalance()
	}()
	t := time.NewTimer(leaveTimeout)
	defer t.Stop()
	select {
	case <-done:
		s.cancelCl()
		return
	case <-t.C:
	}
	s.log.Warn("leaving the consumer group is waiting for a rebalance in progress (a dead member's session?); closing without leaving", "waited", leaveTimeout.String())
	s.cancelCl()
	<-done
}
