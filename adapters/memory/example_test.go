package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// A Consumer reads a memory broker like any other: here a permanent failure
// lands in the dead-letter queue with its reason.
func Example() {
	ctx := context.Background()
	broker := memory.NewBroker()
	_ = broker.Publish(ctx, "payments",
		&consumer.Message{ID: "p-1", Key: "alice", Body: []byte(`{"amount":10}`)},
		&consumer.Message{ID: "p-2", Key: "bob", Body: []byte(`not json`)},
		&consumer.Message{ID: "p-3", Key: "alice", Body: []byte(`{"amount":5}`)},
	)

	done := make(chan struct{})
	seen := 0
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		seen++
		if seen == 3 {
			defer close(done)
		}
		if m.Body[0] != '{' {
			return consumer.Permanent(errors.New("not json"))
		}
		fmt.Println("processed", m.ID)
		return nil
	})
	c, err := consumer.New(broker.NewSource("payments", "ledger"), h, consumer.Config{
		Name: "ledger", Concurrency: 1, Logger: slog.New(slog.DiscardHandler),
		Duplicates: consumer.AllowDuplicates("example: prints messages, applies no effect"),
	})
	if err != nil {
		panic(err)
	}
	go func() { <-done; _ = c.Stop(ctx) }()
	if err := c.Run(ctx); err != nil {
		panic(err)
	}
	for _, m := range broker.DeadLetters("payments", "ledger") {
		fmt.Println("dead letter", m.ID, m.Header(consumer.HeaderDeadLetterReason))
	}
	fmt.Println("depth", broker.Depth("payments"))
	// Output:
	// processed p-1
	// processed p-3
	// dead letter p-2 permanent
	// depth 0
}
