// Package settle seeds the settle analyzer's cases: it builds an oncely
// consumer, so it is user code in scope.
package settle

import (
	"context"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

func run(ctx context.Context) error {
	b, err := adapters.Open(ctx, "mem://")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "payments", "ledger")
	if err != nil {
		return err
	}
	_, err = consumer.New(src, nil, consumer.Config{Name: "ledger"})
	return err
}

// myDelivery implements consumer.Delivery.
type myDelivery struct{ consumer.Delivery }

func (myDelivery) Ack(ctx context.Context) error { return nil }

// job has an Ack method but is no delivery.
type job struct{}

func (job) Ack() {}

// ---- must be reported ----

func settleByHand(ctx context.Context, d consumer.Delivery, m myDelivery) {
	_ = d.Ack(ctx)                          // want `Ack settles a delivery outside the runtime`
	_ = d.Retry(ctx, time.Second, nil)      // want `Retry settles a delivery outside the runtime`
	_ = d.DeadLetter(ctx, nil)              // want `DeadLetter settles a delivery outside the runtime`
	_ = m.Ack(ctx)                          // want `Ack settles a delivery outside the runtime`
	_ = kgo.AutoCommitInterval(time.Second) // want `kgo.AutoCommitInterval configures auto-commit`
	_ = kgo.AutoCommitMarks()               // want `kgo.AutoCommitMarks configures auto-commit`
}

func kafkaAutoCommit() {
	_, _ = kgo.NewClient(kgo.SeedBrokers("localhost:9092"), kgo.ConsumerGroup("ledger")) // want `kgo.NewClient with kgo.ConsumerGroup and without kgo.DisableAutoCommit`
	opts := []kgo.Opt{kgo.SeedBrokers("localhost:9092")}
	opts = append(opts, kgo.ConsumerGroup("ledger"), kgo.ConsumeTopics("payments"))
	_, _ = kgo.NewClient(opts...) // want `kgo.NewClient with kgo.ConsumerGroup`
}

func rabbitAutoAck(ctx context.Context, ch *amqp.Channel, autoAck bool) {
	_, _ = ch.Consume("payments", "", true, false, false, false, nil)                    // want `Channel.Consume with autoAck not false`
	_, _ = ch.ConsumeWithContext(ctx, "payments", "", autoAck, false, false, false, nil) // want `Channel.ConsumeWithContext with autoAck not false`
}

// ---- must not be reported ----

func fine(ctx context.Context, ch *amqp.Channel, j job, opts []kgo.Opt) {
	_, _ = kgo.NewClient(kgo.SeedBrokers("localhost:9092"), kgo.ConsumerGroup("ledger"), kgo.DisableAutoCommit())
	_, _ = kgo.NewClient(kgo.SeedBrokers("localhost:9092")) // a producer: no group, nothing to commit
	_, _ = kgo.NewClient(opts...)                           // options it cannot see
	_, _ = ch.Consume("payments", "", false, false, false, false, nil)
	j.Ack() // not a consumer.Delivery
}

func reviewed(ctx context.Context, d consumer.Delivery) {
	//oncely:allow settle this tool drains a queue whose messages are already archived
	_ = d.Ack(ctx)
}
