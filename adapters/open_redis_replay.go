package adapters

import (
	"context"
	"fmt"

	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/adapters/redis"
)

var _ Replayer = (*redisBroker)(nil)

// PlanReplay plans the replay of the consumer group consumerName on the
// source stream as one partition, 0, with entry IDs (PositionID,
// TargetID); a target is earliest, a time, or an entry ID for partition 0
// (to.EntryIDs, the first entry delivered again), not offsets.
func (r *redisBroker) PlanReplay(ctx context.Context, source, consumerName string, to ReplayTarget) (ReplayPlan, error) {
	if err := checkNames(source, consumerName); err != nil {
		return ReplayPlan{}, err
	}
	if len(to.Offsets) > 0 {
		return ReplayPlan{}, fmt.Errorf("replay of a Redis consumer group: %s: a stream's positions are entry IDs, not offsets: give 0:<ms>-<seq> (e.g. 0:1733550000000-0), earliest or a time", to)
	}
	var entryID string
	for p, id := range to.EntryIDs {
		if p != 0 {
			return ReplayPlan{}, fmt.Errorf("replay of a Redis consumer group: partition %d: a source is one stream, partition 0", p)
		}
		entryID = id
	}
	if err := checkConsumer(ctx, r, source, consumerName); err != nil {
		return ReplayPlan{}, err
	}
	pt, err := redis.PlanReplay(ctx, r.client, source, consumerName, to.Time, entryID)
	if err != nil {
		return ReplayPlan{}, err
	}
	part := ReplayPartition{ReplayPartition: kafka.ReplayPartition{Committed: -1, Covered: pt.Covered, EarliestAvailable: pt.EarliestAvailable},
		PositionID: pt.Position, TargetID: pt.Target}
	members := pt.Live
	if members == nil {
		members = []string{}
	}
	return ReplayPlan{Source: source, Consumer: consumerName, Broker: r.Kind(), To: to.String(), Partitions: []ReplayPartition{part}, Members: members}, nil
}

func (r *redisBroker) ReplayIDs(ctx context.Context, plan ReplayPlan, fn func(partition int32, ids []string) error) error {
	for _, p := range plan.Partitions {
		err := redis.ReplayIDs(ctx, r.client, plan.Source, r.cfg.IDField, p.TargetID, p.PositionID, func(ids []string) error { return fn(p.Partition, ids) })
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *redisBroker) CommitReplay(ctx context.Context, plan ReplayPlan) error {
	for _, p := range plan.Partitions {
		if p.TargetID == p.PositionID {
			continue
		}
		if err := redis.CommitReplay(ctx, r.client, plan.Source, plan.Consumer, p.TargetID); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	return nil
}
