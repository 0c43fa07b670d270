package kafka

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ownership is member => topic => partitions.
type ownership map[string]map[string][]int32

// rebalance runs one classic-protocol round of gb over members that own
// what owned says, and returns the plan the leader would send. It checks the
// cooperative rule on the way: no partition goes to a member while another
// member still owns it.
func rebalance(t *testing.T, gb kgo.GroupBalancer, owned ownership, topics map[string]int32, gen int32) ownership {
	t.Helper()
	var members []kmsg.JoinGroupResponseMember
	for _, id := range slices.Sorted(maps.Keys(owned)) {
		members = append(members, kmsg.JoinGroupResponseMember{
			MemberID:         id,
			ProtocolMetadata: gb.JoinGroupMetadata(slices.Sorted(maps.Keys(topics)), owned[id], gen),
		})
	}
	mb, _, err := gb.MemberBalancer(members)
	require.NoError(t, err)
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(topics)
	require.NoError(t, err)
	plan := ownership{}
	for _, a := range into.IntoSyncAssignment() {
		got, err := gb.ParseSyncAssignment(a.MemberAssignment)
		require.NoError(t, err)
		plan[a.MemberID] = got
	}
	owner := map[string]string{}
	for id, ts := range owned {
		for topic, ps := range ts {
			for _, p := range ps {
				owner[fmt.Sprint(topic, p)] = id
			}
		}
	}
	for id, ts := range plan {
		for topic, ps := range ts {
			for _, p := range ps {
				if o, ok := owner[fmt.Sprint(topic, p)]; ok && o != id {
					t.Fatalf("round %d gives %s/%d to %s while %s still owns it", gen, topic, p, id, o)
				}
			}
		}
	}
	return plan
}

// settle runs rounds until the plan stops changing (at most 5).
func settle(t *testing.T, gb kgo.GroupBalancer, owned ownership, topics map[string]int32) ownership {
	t.Helper()
	for gen := int32(1); gen <= 5; gen++ {
		next := rebalance(t, gb, owned, topics, gen)
		if equalOwnership(next, owned) {
			return next
		}
		owned = next
	}
	t.Fatalf("the plan did not settle in 5 rounds: %v", owned)
	return nil
}

func equalOwnership(a, b ownership) bool {
	norm := func(o ownership) map[string]string {
		m := map[string]string{}
		for id, ts := range o {
			for topic, ps := range ts {
				ps = slices.Clone(ps)
				slices.Sort(ps)
				if len(ps) > 0 {
					m[id+"\x00"+topic] = fmt.Sprint(ps)
				}
			}
		}
		return m
	}
	return maps.Equal(norm(a), norm(b))
}

// sourceTopics is a Source's six topics: its own and five retry tiers, five
// partitions each.
var sourceTopics = map[string]int32{
	"payments": 5, "payments.g.retry.1s": 5, "payments.g.retry.10s": 5,
	"payments.g.retry.1m": 5, "payments.g.retry.10m": 5, "payments.g.retry.1h": 5,
}

// requireSpread checks that every member holds a share of every topic that
// differs from the others' by at most one, and that every partition is held
// exactly once.
func requireSpread(t *testing.T, plan ownership, topics map[string]int32) {
	t.Helper()
	for topic, n := range topics {
		seen := map[int32]string{}
		lo, hi := int(n), 0
		for id := range plan {
			ps := plan[id][topic]
			lo, hi = min(lo, len(ps)), max(hi, len(ps))
			for _, p := range ps {
				require.Emptyf(t, seen[p], "%s/%d held by %s and %s", topic, p, seen[p], id)
				seen[p] = id
			}
		}
		require.Lenf(t, seen, int(n), "%s: every partition assigned", topic)
		require.LessOrEqualf(t, hi-lo, 1, "%s: shares %d..%d in %v", topic, lo, hi, plan)
	}
}

func TestBalancerSpreadsEachTopicFromScratch(t *testing.T) {
	for _, members := range []int{1, 3, 5, 7} {
		t.Run(fmt.Sprint(members, " members"), func(t *testing.T) {
			owned := ownership{}
			for i := range members {
				owned[fmt.Sprintf("m%d", i)] = nil
			}
			requireSpread(t, settle(t, topicBalancer{}, owned, sourceTopics), sourceTopics)
		})
	}
}

// The group of the ledger's TestInstancesStartTogether/kafka once settled
// like this: ledger-0 held six tier partitions and no partition of the
// source topic, balanced by total count, and applied no payment.
var sourcelessMember = ownership{
	"m0": {"payments.g.retry.10m": {4}, "payments.g.retry.10s": {2}, "payments.g.retry.1h": {4}, "payments.g.retry.1m": {2}, "payments.g.retry.1s": {3, 4}},
	"m1": {"payments": {1}, "payments.g.retry.10m": {0, 1}, "payments.g.retry.10s": {0}, "payments.g.retry.1m": {1}, "payments.g.retry.1s": {0}},
	"m2": {"payments": {2}, "payments.g.retry.10m": {3}, "payments.g.retry.10s": {3}, "payments.g.retry.1h": {3}, "payments.g.retry.1m": {3}},
	"m3": {"payments": {0}, "payments.g.retry.10m": {2}, "payments.g.retry.10s": {1}, "payments.g.retry.1h": {0, 1}, "payments.g.retry.1m": {0}},
	"m4": {"payments": {3, 4}, "payments.g.retry.10s": {4}, "payments.g.retry.1h": {2}, "payments.g.retry.1m": {4}, "payments.g.retry.1s": {1, 2}},
}

// Catches: balancing by total partition count over all topics (the plain
// cooperative-sticky balancer), which leaves a member without any source
// partition while another holds two.
func TestBalancerGivesEveryMemberASourcePartition(t *testing.T) {
	plain := settle(t, kgo.CooperativeStickyBalancer(), sourcelessMember, sourceTopics)
	require.Empty(t, plain["m0"]["payments"], "the plain balancer keeps m0 sourceless (else this test checks nothing)")

	plan := settle(t, topicBalancer{}, sourcelessMember, sourceTopics)
	requireSpread(t, plan, sourceTopics)
	for id := range plan {
		require.Lenf(t, plan[id]["payments"], 1, "%s's source partitions in %v", id, plan)
	}
}

// Catches: a balancer that reshuffles on every rebalance (losing what
// sticky balancing saves: warm partitions, uncommitted work).
func TestBalancerIsSticky(t *testing.T) {
	start := ownership{"m0": nil, "m1": nil, "m2": nil, "m3": nil, "m4": nil}
	plan := settle(t, topicBalancer{}, start, sourceTopics)
	require.True(t, equalOwnership(plan, rebalance(t, topicBalancer{}, plan, sourceTopics, 9)), "a balanced group keeps its plan")

	// m4 leaves: every survivor keeps all it held.
	survivors := maps.Clone(plan)
	delete(survivors, "m4")
	after := settle(t, topicBalancer{}, survivors, sourceTopics)
	requireSpread(t, after, sourceTopics)
	for id, ts := range survivors {
		for topic, ps := range ts {
			require.Subsetf(t, after[id][topic], ps, "%s keeps %s %v", id, topic, ps)
		}
	}
}

// A member subscribed to fewer topics (mid-deploy, with fewer tiers) gets
// partitions of its own topics only.
func TestBalancerHonoursSubscriptions(t *testing.T) {
	gb := topicBalancer{}
	all := slices.Sorted(maps.Keys(sourceTopics))
	members := []kmsg.JoinGroupResponseMember{
		{MemberID: "a", ProtocolMetadata: gb.JoinGroupMetadata(all, nil, 1)},
		{MemberID: "b", ProtocolMetadata: gb.JoinGroupMetadata([]string{"payments"}, nil, 1)},
	}
	mb, _, err := gb.MemberBalancer(members)
	require.NoError(t, err)
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(sourceTopics)
	require.NoError(t, err)
	plan := map[string]map[string][]int32{}
	for _, a := range into.IntoSyncAssignment() {
		plan[a.MemberID], err = gb.ParseSyncAssignment(a.MemberAssignment)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"payments"}, slices.Collect(maps.Keys(plan["b"])))
	require.Len(t, plan["b"]["payments"], 2, "b's share of the source: 2 or 3 of 5")
	require.Len(t, plan["a"]["payments"], 3)
	for topic, n := range sourceTopics {
		if topic != "payments" {
			require.Lenf(t, plan["a"][topic], int(n), "a holds all of %s", topic)
		}
	}
}
