package adapters

import (
	"context"
	"fmt"

	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/adapters/nats"
)

var _ Replayer = (*natsBroker)(nil)

// PlanReplay plans the replay of the durable consumer consumerName on
// source's stream as one partition, 0, whose offsets are stream sequences;
// ReplayTarget.Offsets may name partition 0 only.
func (n *natsBroker) PlanReplay(ctx context.Context, source, consumerName string, to ReplayTarget) (ReplayPlan, error) {
	if err := checkNames(source, consumerName); err != nil {
		return ReplayPlan{}, err
	}
	if len(to.EntryIDs) > 0 {
		return ReplayPlan{}, fmt.Errorf("replay of a JetStream consumer: give a stream sequence (0:<sequence>), not an entry ID: %s", to)
	}
	if err := checkConsumer(ctx, n, source, consumerName); err != nil {
		return ReplayPlan{}, err
	}
	var seq uint64
	for p, o := range to.Offsets {
		if p != 0 {
			return ReplayPlan{}, fmt.Errorf("replay of a JetStream consumer: partition %d: a stream is one partition, 0, whose offsets are stream sequences", p)
		}
		seq = uint64(max(o, 1))
	}
	pt, err := nats.PlanReplay(ctx, n.js, source, consumerName, to.Time, seq)
	if err != nil {
		return ReplayPlan{}, err
	}
	part := ReplayPartition{ReplayPartition: kafka.ReplayPartition{Partition: 0, Committed: int64(pt.Position), Position: int64(pt.Position), Target: int64(pt.Target),
		LogStart: int64(pt.First), LogEnd: int64(pt.End), Covered: int64(pt.Position - pt.Target), EarliestAvailable: pt.EarliestAvailable}}
	plan := ReplayPlan{Source: source, Consumer: consumerName, Broker: n.Kind(), To: to.String(), Partitions: []ReplayPartition{part}, Members: []string{}}
	if pt.Waiting > 0 {
		plan.Members = append(plan.Members, fmt.Sprintf("%d pull requests waiting (a Source is running)", pt.Waiting))
	}
	return plan, nil
}

func (n *natsBroker) ReplayIDs(ctx context.Context, plan ReplayPlan, fn func(partition int32, ids []string) error) error {
	for _, p := range plan.Partitions {
		err := nats.ReplayIDs(ctx, n.js, plan.Source, uint64(p.Target), uint64(p.Position), func(ids []string) error { return fn(p.Partition, ids) })
		if err != nil {
			return err
		}
	}
	return nil
}

func (n *natsBroker) CommitReplay(ctx context.Context, plan ReplayPlan) error {
	for _, p := range plan.Partitions {
		if err := nats.CommitReplay(ctx, n.js, plan.Source, plan.Consumer, uint64(p.Target)); err != nil {
			return err
		}
	}
	return nil
}
