package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/memory"
)

func batchMsgs(ids ...string) []*consumer.Message {
	msgs := make([]*consumer.Message, len(ids))
	for i, id := range ids {
		msgs[i] = &consumer.Message{ID: id, Source: "payments"}
	}
	return msgs
}

// TestBatchChain builds the usual chain around a BatchHandler. Bug caught:
// a middleware of the module that turns a BatchHandler into a plain Handler
// (consumer.New would refuse the chain with ErrNotBatch).
func TestBatchChain(t *testing.T) {
	st, err := memory.New(memory.Config{})
	require.NoError(t, err)
	bh := consumer.BatchHandlerFunc(func(context.Context, []*consumer.Message) error { return nil })
	chain := consumer.Chain(bh, middleware.Logging(slog.New(slog.DiscardHandler)), middleware.Timeout(time.Second),
		middleware.Retry(retry.Policy{MaxAttempts: 2}), consumer.Recover, middleware.Idempotency(st))
	_, ok := chain.(consumer.BatchHandler)
	require.True(t, ok, "%T is not a BatchHandler", chain)
}

// TestIdempotencyBatch checks the batch claim through the middleware.
// Bugs caught: duplicates passed to the handler or not marked, a
// BatchError's positions not mapped back to the middleware's batch (the
// wrong message would be dead-lettered).
func TestIdempotencyBatch(t *testing.T) {
	st, err := memory.New(memory.Config{})
	require.NoError(t, err)
	ctx := consumer.WithName(context.Background(), "ledger")
	var seen []string
	bh := consumer.BatchHandlerFunc(func(_ context.Context, msgs []*consumer.Message) error {
		seen = seen[:0]
		for i, m := range msgs {
			seen = append(seen, m.ID)
			if m.ID == "d" {
				return consumer.BatchError{Failed: map[int]error{i: errors.New("bad d")}}
			}
		}
		return nil
	})
	h := middleware.Idempotency(st)(bh).(consumer.BatchHandler)
	require.NoError(t, h.HandleBatch(ctx, batchMsgs("a", "b")))
	err = h.HandleBatch(ctx, batchMsgs("a", "c", "b", "d"))
	require.Equal(t, []string{"c", "d"}, seen, "only messages not processed before reach the handler")
	be, ok := consumer.AsBatchError(err)
	require.True(t, ok, "%v", err)
	require.Len(t, be.Failed, 1)
	require.EqualError(t, be.Failed[3], "bad d", "position 1 of the handler's batch is position 3 of the middleware's")
}

// TestTimeoutBatch times out a slow batch. Bug caught: a batch without a
// deadline, or a timed-out batch reported as success.
func TestTimeoutBatch(t *testing.T) {
	bh := consumer.BatchHandlerFunc(func(ctx context.Context, _ []*consumer.Message) error {
		<-ctx.Done()
		return ctx.Err()
	})
	h := middleware.Timeout(10 * time.Millisecond)(bh).(consumer.BatchHandler)
	err := h.HandleBatch(context.Background(), batchMsgs("a", "b"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err))
}

// TestLoggingBatch logs one line per batch call. Bug caught: a line per
// message (a batch of 500 writes 500), a partial failure logged as success.
func TestLoggingBatch(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	bh := consumer.BatchHandlerFunc(func(_ context.Context, msgs []*consumer.Message) error {
		if len(msgs) == 3 {
			return consumer.BatchError{Failed: map[int]error{1: errors.New("bad")}}
		}
		return nil
	})
	h := middleware.Logging(logger)(bh).(consumer.BatchHandler)
	ctx := consumer.WithName(context.Background(), "ledger")
	require.NoError(t, h.HandleBatch(ctx, batchMsgs("a", "b")))
	_ = h.HandleBatch(ctx, batchMsgs("a", "b", "c"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var ok, partial map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &ok))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &partial))
	require.Equal(t, "processed", ok["outcome"])
	require.EqualValues(t, 2, ok["batch_size"])
	require.Equal(t, "a", ok["first_id"])
	require.Equal(t, "b", ok["last_id"])
	require.Equal(t, "partial", partial["outcome"])
	require.Equal(t, "WARN", partial["level"])
	require.EqualValues(t, 1, partial["failed"])
}

// TestRetryBatch retries a batch that failed as a whole, or named only
// retryable failures, and not one that named a permanent failure. Bugs
// caught: a transient batch failure bisected before the in-process retry, a
// permanent named failure retried in process.
func TestRetryBatch(t *testing.T) {
	calls := 0
	var named error
	bh := consumer.BatchHandlerFunc(func(_ context.Context, msgs []*consumer.Message) error {
		calls++
		switch {
		case len(msgs) == 1:
			return consumer.BatchError{Failed: map[int]error{0: named}}
		case calls < 3:
			return errors.New("serialization failure")
		}
		return nil
	})
	h := middleware.Retry(retry.Policy{MaxAttempts: 5, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond})(bh).(consumer.BatchHandler)
	require.NoError(t, h.HandleBatch(context.Background(), batchMsgs("a", "b")))
	require.Equal(t, 3, calls)

	calls, named = 0, consumer.Permanent(errors.New("bad"))
	_, isNamed := consumer.AsBatchError(h.HandleBatch(context.Background(), batchMsgs("a")))
	require.True(t, isNamed)
	require.Equal(t, 1, calls, "a BatchError naming a permanent failure is not retried in process")

	calls, named = 0, errors.New("transient")
	_, isNamed = consumer.AsBatchError(h.HandleBatch(context.Background(), batchMsgs("a")))
	require.True(t, isNamed, "the last try's BatchError")
	require.Equal(t, 5, calls, "a BatchError naming only retryable failures is retried in process")
}
