package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// A consumer over the memory broker: a handler that fails a message for good
// dead-letters it at once, a transient failure is retried, and Stop drains
// what is in flight.
func ExampleNew() {
	broker := memory.NewBroker()
	ctx := context.Background()
	_ = broker.Publish(ctx, "payments",
		&consumer.Message{ID: "pay-1", Key: "acct-1", Body: []byte(`{"cents":500}`)},
		&consumer.Message{ID: "pay-2", Key: "acct-2", Body: []byte(`not json`)},
		&consumer.Message{ID: "pay-3", Key: "acct-1", Body: []byte(`{"cents":700}`)},
	)

	var mu sync.Mutex
	handled := map[string]int{}
	done := make(chan struct{})
	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case msg.Body[0] != '{':
			return consumer.Permanent(errors.New("undecodable body"))
		case msg.ID == "pay-3" && msg.Attempt == 1:
			return errors.New("deadlock detected") // retried on the broker
		}
		handled[msg.ID] = msg.Attempt
		if len(handled) == 2 {
			close(done)
		}
		return nil
	})
	c, err := consumer.New(broker.NewSource("payments", "ledger"), h, consumer.Config{
		Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"),
		Name:       "ledger",
		Retry:      retry.Policy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond, Jitter: retry.NoJitter},
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = c.Run(ctx) }()
	<-done
	if err := c.Stop(ctx); err != nil {
		fmt.Println(err)
	}

	fmt.Println("pay-1 handled at attempt", handled["pay-1"])
	fmt.Println("pay-3 handled at attempt", handled["pay-3"])
	for _, dl := range broker.DeadLetters("payments", "ledger") {
		fmt.Println("dead letter:", dl.ID, dl.Header(consumer.HeaderDeadLetterReason), dl.Header(consumer.HeaderError))
	}
	// Output:
	// pay-1 handled at attempt 1
	// pay-3 handled at attempt 2
	// dead letter: pay-2 permanent permanent: undecodable body
}

// New reports every problem of a Config at once.
func ExampleNew_invalidConfig() {
	src := memory.NewBroker().NewSource("payments", "ledger")
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	_, err := consumer.New(src, h, consumer.Config{Name: "billing", SettleTimeout: -time.Second, Duplicates: consumer.AllowDuplicates("example: applies no effect")})
	fmt.Println(err)
	// Output:
	// oncely: invalid consumer config: config.Name is "billing" but the Source was opened for consumer "ledger": claims and dead letters would live under different names; use one name for both
	// SettleTimeout must be > 0, got -1s
}
