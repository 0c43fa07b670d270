package middleware_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	mem "github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
)

// A batch handler names one message of a key as failed, transiently: Retry
// tries the batch again in process, so the key's later message in the batch
// does not commit before it. Returned at once, the BatchError would send the
// named message to the broker's retry while the runtime ran the key's later
// message: its effect first.
func TestRetryBatchErrorKeepsKeyOrder(t *testing.T) {
	b := mem.NewBroker()
	require.NoError(t, b.Publish(context.Background(), "payments",
		&consumer.Message{ID: "k-1", Key: "k", Body: []byte("1")},
		&consumer.Message{ID: "k-2", Key: "k", Body: []byte("2")}))
	var mu sync.Mutex
	var committed []string
	failed := false
	done := make(chan struct{})
	bh := consumer.BatchHandlerFunc(func(_ context.Context, msgs []*consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		for i, m := range msgs {
			if m.ID == "k-1" && !failed {
				failed = true
				return consumer.BatchError{Failed: map[int]error{i: errors.New("serialization failure")}}
			}
		}
		for _, m := range msgs { // the batch commits
			committed = append(committed, m.ID)
		}
		if len(committed) == 2 {
			close(done)
		}
		return nil
	})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fast := retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}
	c, err := consumer.New(b.NewSource("payments", "ledger"), bh,
		consumer.Config{Name: "ledger", Concurrency: 1, BatchSize: 2, BatchMaxWait: time.Second, Retry: fast, Logger: quiet},
		middleware.Retry(fast), middleware.Idempotency(mwStore(t)))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("timed out waiting for both messages to commit")
	}
	require.NoError(t, c.Stop(ctx))
	require.NoError(t, <-runErr)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"k-1", "k-2"}, committed, "commit order of key k")
}
