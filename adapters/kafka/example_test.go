package kafka_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/consumer"
)

func ExampleRetryTopic() {
	fmt.Println(kafka.RetryTopic("payments", "ledger", 10*time.Second))
	fmt.Println(kafka.RetryTopic("payments", "ledger", time.Hour))
	fmt.Println(kafka.DeadLetterTopic("payments", "ledger"))
	// Output:
	// payments.ledger.retry.10s
	// payments.ledger.retry.1h
	// payments.ledger.dlq
}

// The consumer name and the group are the same: retry and dead-letter
// topics, and idempotency claims, are keyed by it.
func ExampleNew() {
	ctx := context.Background()
	src, err := kafka.New(ctx, kafka.Config{
		Brokers: []string{"127.0.0.1:9092"},
		Topic:   "payments",
		Group:   "ledger",
	})
	if err != nil {
		log.Fatal(err)
	}
	c, err := consumer.New(src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		fmt.Println(m.ID, m.Key, string(m.Body))
		return nil
	}), consumer.Config{Name: "ledger", Duplicates: consumer.AllowDuplicates("example: prints messages, applies no effect")})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
