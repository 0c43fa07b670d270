package adapters

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncely/oncely/adapters/kafka"
)

var _ Replayer = (*kafkaBroker)(nil)

func (k *kafkaBroker) PlanReplay(ctx context.Context, source, consumerName string, to ReplayTarget) (ReplayPlan, error) {
	if err := checkNames(source, consumerName); err != nil {
		return ReplayPlan{}, err
	}
	if len(to.EntryIDs) > 0 {
		return ReplayPlan{}, fmt.Errorf("replay of a Kafka consumer group: give offsets (partition:offset), not entry IDs: %s", to)
	}
	if err := checkConsumer(ctx, k, source, consumerName); err != nil {
		return ReplayPlan{}, err
	}
	parts, err := k.c.PlanReplay(ctx, source, consumerName, to.Time, to.Offsets)
	if errors.Is(err, kafka.ErrNoTopic) {
		return ReplayPlan{}, noSource("kafka topic", source)
	}
	if err != nil {
		return ReplayPlan{}, err
	}
	members, err := k.c.GroupMembers(ctx, consumerName)
	if err != nil {
		return ReplayPlan{}, err
	}
	plan := ReplayPlan{Source: source, Consumer: consumerName, Broker: k.Kind(), To: to.String(), Members: members}
	for _, p := range parts {
		plan.Partitions = append(plan.Partitions, ReplayPartition{ReplayPartition: p})
	}
	return plan, nil
}

func (k *kafkaBroker) ReplayIDs(ctx context.Context, plan ReplayPlan, fn func(partition int32, ids []string) error) error {
	return k.c.ReplayIDs(ctx, plan.Source, kafkaParts(plan), fn)
}

// kafkaParts returns plan's partitions as the kafka package has them.
func kafkaParts(plan ReplayPlan) []kafka.ReplayPartition {
	out := make([]kafka.ReplayPartition, len(plan.Partitions))
	for i, p := range plan.Partitions {
		out[i] = p.ReplayPartition
	}
	return out
}

func (k *kafkaBroker) CommitReplay(ctx context.Context, plan ReplayPlan) error {
	return k.c.CommitReplay(ctx, plan.Source, plan.Consumer, kafkaParts(plan))
}
