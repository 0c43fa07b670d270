package kafka

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// balancers returns the group balancer of a Source: per-topic
// cooperative-sticky. Under the consumer group protocol
// (kgo.ServerSideBalancer) the broker assigns, and the balancer only names
// its assignor: range, which spreads each topic on its own as topicBalancer
// does (the broker's default, uniform, evens out totals over all topics).
func balancers(serverSide bool) kgo.Opt {
	if serverSide {
		return kgo.Balancers(kgo.RangeBalancer())
	}
	return kgo.Balancers(topicBalancer{})
}

// topicBalancer is cooperative-sticky balancing done one topic at a time.
//
// A Source consumes its topic and its retry tiers' topics in one group.
// Sticky balancing evens out each member's total partition count over all
// of them, so with five members and six five-partition topics a member can
// hold six tier partitions and no source partition — it idles while another
// member handles two source partitions. Balancing each topic on its own
// spreads every topic, the source above all, over the members (counts per
// topic differ by at most one), and keeps what makes cooperative-sticky
// worth having: members keep what they own where the balance allows, and a
// partition that moves is first revoked, then assigned in the next round.
//
// Its protocol name is "cooperative-sticky" on purpose: the member metadata
// (subscriptions, owned partitions, the sticky generation) is exactly
// cooperative-sticky's, and only the group's leader runs the assignment, so
// members of older versions and other clients mix in freely (a group whose
// leader is not an oncely Source gets plain cooperative-sticky plans, which
// are valid too). The name also keeps franz-go's handling of a restarted
// static leader (KIP-814): the broker hands it its old plan, and franz-go
// rebalances when the plan it computes differs — which it does only for
// the balancer names it knows. Under another name a static member restarted
// with other topics would keep consuming the old ones.
type topicBalancer struct{}

var sticky = kgo.CooperativeStickyBalancer()

func (topicBalancer) ProtocolName() string { return sticky.ProtocolName() }
func (topicBalancer) IsCooperative() bool  { return true }

func (topicBalancer) JoinGroupMetadata(topics []string, owned map[string][]int32, generation int32) []byte {
	return sticky.JoinGroupMetadata(topics, owned, generation)
}

func (topicBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

func (tb topicBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	b, err := kgo.NewConsumerBalancer(tb, members)
	return b, b.MemberTopics(), err
}

// Balance runs the cooperative-sticky balancer once per topic, each time
// over the members subscribed to that topic with their metadata cut down to
// it, and joins the plans.
func (topicBalancer) Balance(b *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	plan := b.NewPlan()
	byID := make(map[string]*kmsg.JoinGroupResponseMember)
	for i := range b.Members() {
		m, _ := b.MemberAt(i)
		byID[m.MemberID] = m
	}
	inner := sticky.(kgo.ConsumerBalancerBalance)
	for _, topic := range slices.Sorted(maps.Keys(topics)) {
		var subscribed []kmsg.JoinGroupResponseMember
		b.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
			if slices.Contains(meta.Topics, topic) {
				cut := onlyTopic(meta, topic)
				one := *m
				one.ProtocolMetadata = cut.AppendTo(nil)
				subscribed = append(subscribed, one)
			}
		})
		if len(subscribed) == 0 {
			continue
		}
		cb, err := kgo.NewConsumerBalancer(inner, subscribed)
		if err != nil {
			b.SetError(err)
			return plan
		}
		p, ok := inner.Balance(cb, map[string]int32{topic: topics[topic]}).(*kgo.BalancePlan)
		if !ok {
			continue
		}
		for id, assigned := range p.AsMemberIDMap() {
			if parts := assigned[topic]; len(parts) > 0 {
				plan.AddPartitions(byID[id], topic, parts)
			}
		}
	}
	return plan
}

// onlyTopic returns meta with its subscriptions, owned partitions and sticky
// current assignment cut down to topic.
func onlyTopic(meta *kmsg.ConsumerMemberMetadata, topic string) kmsg.ConsumerMemberMetadata {
	one := *meta
	one.Topics = []string{topic}
	one.OwnedPartitions = nil
	for _, o := range meta.OwnedPartitions {
		if o.Topic == topic {
			one.OwnedPartitions = append(one.OwnedPartitions, o)
		}
	}
	one.UserData = nil
	if len(meta.UserData) > 0 {
		var sm kmsg.StickyMemberMetadata
		if sm.ReadFrom(meta.UserData) == nil {
			cur := sm.CurrentAssignment
			sm.CurrentAssignment = nil
			for _, a := range cur {
				if a.Topic == topic {
					sm.CurrentAssignment = append(sm.CurrentAssignment, a)
				}
			}
			one.UserData = sm.AppendTo(nil)
		}
	}
	return one
}
