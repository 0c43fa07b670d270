package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	memstore "github.com/oncely/oncely/store/memory"
)

// A BatchHandler gets the messages a batch at a time, only those not
// processed before (the idempotency middleware claims the batch at once),
// and names the ones it cannot apply in a BatchError: those are settled
// alone, the rest of the batch runs again and is acked.
func ExampleBatchHandlerFunc() {
	broker := memory.NewBroker()
	ctx := context.Background()
	for i := 1; i <= 6; i++ {
		body := fmt.Sprintf(`{"cents":%d}`, i*100)
		if i == 4 {
			body = "not json"
		}
		_ = broker.Publish(ctx, "payments", &consumer.Message{ID: fmt.Sprintf("pay-%d", i), Key: fmt.Sprintf("acct-%d", i%2), Body: []byte(body)})
	}
	_ = broker.Publish(ctx, "payments", &consumer.Message{ID: "pay-2", Key: "acct-0", Body: []byte(`{"cents":200}`)}) // a redelivery

	st, _ := memstore.New(memstore.Config{})
	var mu sync.Mutex
	var applied []string
	done := make(chan struct{})
	h := consumer.BatchHandlerFunc(func(ctx context.Context, msgs []*consumer.Message) error {
		failed := map[int]error{}
		for i, m := range msgs {
			if m.Body[0] != '{' {
				failed[i] = consumer.Permanent(errors.New("undecodable body"))
			}
		}
		if len(failed) > 0 {
			return consumer.BatchError{Failed: failed} // nothing of this call is applied
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			applied = append(applied, m.ID) // one set-based statement in a real handler
		}
		if len(applied) == 5 {
			close(done)
		}
		return nil
	})
	c, err := consumer.New(broker.NewSource("payments", "ledger"), h, consumer.Config{
		Name:         "ledger",
		BatchSize:    10,
		BatchMaxWait: 20 * time.Millisecond,
		Retry:        retry.Policy{MaxAttempts: 3},
		Logger:       slog.New(slog.DiscardHandler),
	}, middleware.Idempotency(st))
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = c.Run(ctx) }()
	<-done
	if err := c.Stop(ctx); err != nil {
		fmt.Println(err)
	}
	sort.Strings(applied)
	fmt.Println("applied:", applied)
	for _, dl := range broker.DeadLetters("payments", "ledger") {
		fmt.Println("dead letter:", dl.ID, dl.Header(consumer.HeaderDeadLetterReason))
	}
	// Output:
	// applied: [pay-1 pay-2 pay-3 pay-5 pay-6]
	// dead letter: pay-4 permanent
}
