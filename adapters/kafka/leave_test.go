package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinDeadMember joins group as a consumer that takes every partition of
// topic and then never heartbeats, as a process killed by SIGKILL does: the
// group keeps it until session has passed.
func joinDeadMember(t *testing.T, addrs []string, group, topic string, partitions int32, session time.Duration) {
	t.Helper()
	cl := client(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = group
	join.SessionTimeoutMillis = int32(session.Milliseconds())
	join.RebalanceTimeoutMillis = join.SessionTimeoutMillis
	join.ProtocolType = "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "cooperative-sticky"
	proto.Metadata = meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, proto)
	resp, err := join.RequestWith(ctx, cl)
	require.NoError(t, err)
	if kerr.ErrorForCode(resp.ErrorCode) == kerr.MemberIDRequired {
		join.MemberID = resp.MemberID
		resp, err = join.RequestWith(ctx, cl)
		require.NoError(t, err)
	}
	require.NoError(t, kerr.ErrorForCode(resp.ErrorCode), "JoinGroup")
	require.Equal(t, resp.MemberID, resp.LeaderID, "the dead member leads its own group")

	assignment := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic = topic
	for p := range partitions {
		at.Partitions = append(at.Partitions, p)
	}
	assignment.Topics = append(assignment.Topics, at)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group = group
	sync.Generation = resp.Generation
	sync.MemberID = resp.MemberID
	sync.ProtocolType = kmsg.StringPtr("consumer")
	sync.Protocol = resp.Protocol
	ga := kmsg.NewSyncGroupRequestGroupAssignment()
	ga.MemberID = resp.MemberID
	ga.MemberAssignment = assignment.AppendTo(nil)
	sync.GroupAssignment = append(sync.GroupAssignment, ga)
	sresp, err := sync.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(sresp.ErrorCode), "SyncGroup")
}

// A member whose join waits for a rebalance that a dead member holds up (the
// broker answers the JoinGroup only when the dead member's session expires)
// still closes within leaveTimeout, not after the dead member's session: a
// SIGTERM then ends the process within a deployment's grace period.
func TestCloseDuringBlockedJoin(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("blockedjoin")
	group := topic
	createTopic(t, addrs, topic, 2)
	const session = 30 * time.Second
	joinDeadMember(t, addrs, group, topic, 2, session)

	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group})
	// Polling starts the join, which the broker holds while it waits for
	// the dead member to rejoin: nothing is assigned.
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
	ds, err := s.Receive(pctx, 10)
	pcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, ds)
	described, err := kadmClient(t, addrs).DescribeGroups(context.Background(), group)
	require.NoError(t, err)
	require.Equal(t, "PreparingRebalance", described[group].State, "the join is held by the dead member")

	start := time.Now()
	require.NoError(t, s.Close(context.Background()))
	took := time.Since(start)
	t.Logf("Close took %s with a join held by a dead member (session %s)", took.Round(time.Millisecond), session)
	require.Less(t, took, leaveTimeout+5*time.Second, "Close waited for the dead member's session")
}
