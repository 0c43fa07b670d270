package rabbitmq_test

import (
	"context"
	"log"
	"os/signal"
	"syscall"

	"github.com/oncely/oncely/adapters/rabbitmq"
	"github.com/oncely/oncely/consumer"
)

// A consumer "ledger" of the quorum queue "payments": the adapter declares
// payments, payments.ledger.retry.<tier> and payments.ledger.dlq, and the
// runtime acks each message after its handler returned.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	src, err := rabbitmq.New(ctx, rabbitmq.Config{
		URL:      "amqp://guest:guest@127.0.0.1:5672/",
		Queue:    "payments",
		Consumer: "ledger",
		Prefetch: 128, // at most the runtime's MaxInFlight (8 × Concurrency = 128 by default)
	})
	if err != nil {
		log.Fatal(err)
	}
	c, err := consumer.New(src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		log.Printf("payment %s (attempt %d): %s", m.ID, m.Attempt, m.Body)
		return nil
	}), consumer.Config{Name: "ledger", Duplicates: consumer.AllowDuplicates("example: logs messages, applies no effect")})
	if err != nil {
		log.Fatal(err)
	}
	// Run closes src when it returns: basic.cancel, acks flushed, channel
	// closed, then the connection.
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
