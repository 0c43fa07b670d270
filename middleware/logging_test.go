package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/memory"
)

// mwLogLines runs h through Logging at debug level and returns the JSON
// lines written.
func mwLogLines(t *testing.T, ctx context.Context, h consumer.Handler, mws ...consumer.Middleware) ([]map[string]any, error) {
	t.Helper()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	chain := consumer.Chain(h, append([]consumer.Middleware{middleware.Logging(logger)}, mws...)...)
	err := chain.Handle(ctx, mwMsg("m-1"))
	var lines []map[string]any
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var l map[string]any
		require.NoError(t, dec.Decode(&l))
		lines = append(lines, l)
	}
	return lines, err
}

func TestLoggingOutcomesAndLevels(t *testing.T) {
	cases := []struct {
		name    string
		h       consumer.HandlerFunc
		level   string
		outcome string
		msg     string
	}{
		{"ok", func(context.Context, *consumer.Message) error { return nil }, "INFO", "processed", "message processed"},
		{"retryable", func(context.Context, *consumer.Message) error { return errors.New("x") }, "WARN", "retryable", "message failed"},
		{"permanent", func(context.Context, *consumer.Message) error { return consumer.Permanent(errors.New("x")) }, "ERROR", "permanent", "message failed permanently"},
		{"outage", func(context.Context, *consumer.Message) error { return consumer.Unavailable(errors.New("x")) }, "WARN", "outage", "dependency unavailable"},
		{"panic", func(context.Context, *consumer.Message) error { panic("x") }, "ERROR", "panic", "handler panicked"},
	}
	for _, tc := range cases {
		lines, err := mwLogLines(t, mwCtx(), tc.h)
		require.Len(t, lines, 1, tc.name)
		l := lines[0]
		require.Equal(t, tc.level, l["level"], tc.name)
		require.Equal(t, tc.outcome, l["outcome"], tc.name)
		require.Equal(t, tc.msg, l["msg"], tc.name)
		require.Equal(t, "ledger", l["consumer"], tc.name)
		require.Equal(t, "m-1", l["message_id"], tc.name)
		require.Equal(t, "payments", l["source"], tc.name)
		require.EqualValues(t, 1, l["attempt"], tc.name)
		require.Contains(t, l, "duration", tc.name)
		require.NotContains(t, l, "try", tc.name)
		if tc.outcome == "processed" {
			require.NoError(t, err)
			require.NotContains(t, l, "error")
		} else {
			require.Error(t, err, tc.name)
			require.Equal(t, err.Error(), l["error"], tc.name)
		}
	}
}

func TestLoggingPanicReturnedAsPanicError(t *testing.T) {
	_, err := mwLogLines(t, mwCtx(), consumer.HandlerFunc(func(context.Context, *consumer.Message) error { panic("boom") }))
	var pe *consumer.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "boom", pe.Value)
}

func TestLoggingCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(mwCtx())
	cancel()
	lines, err := mwLogLines(t, ctx, consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error { return ctx.Err() }))
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, lines, 1)
	require.Equal(t, "cancelled", lines[0]["outcome"])
	require.Equal(t, "WARN", lines[0]["level"])
}

func TestLoggingDuplicate(t *testing.T) {
	s, err := memory.New(memory.Config{})
	require.NoError(t, err)
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	first, err := mwLogLines(t, mwCtx(), ok, middleware.Idempotency(s))
	require.NoError(t, err)
	second, err := mwLogLines(t, mwCtx(), ok, middleware.Idempotency(s))
	require.NoError(t, err)
	require.Equal(t, "processed", first[0]["outcome"])
	require.Equal(t, "duplicate", second[0]["outcome"])
	require.Equal(t, "INFO", second[0]["level"])
}

// TestLoggingInsideRetryLogsEveryTry: one line per try, numbered.
func TestLoggingInsideRetryLogsEveryTry(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	h := &mwScript{results: []any{errors.New("1"), "2", nil}}
	chain := consumer.Chain(h, middleware.Retry(fastPolicy(5)), middleware.Logging(logger))
	require.NoError(t, chain.Handle(mwCtx(), mwMsg("m")))
	var outcomes []string
	var tries []float64
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var l map[string]any
		require.NoError(t, dec.Decode(&l))
		outcomes = append(outcomes, l["outcome"].(string))
		tries = append(tries, l["try"].(float64))
	}
	require.Equal(t, []string{"retryable", "panic", "processed"}, outcomes)
	require.Equal(t, []float64{1, 2, 3}, tries)
}

func TestLoggingDisabledLevelWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	chain := middleware.Logging(logger)(consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return errors.New("x") }))
	require.Error(t, chain.Handle(mwCtx(), mwMsg("m")))
	require.Zero(t, buf.Len())
}

func ExampleLogging() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		// Drop the time and make the duration stable for the example.
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Attr{}
			case "duration":
				return slog.Duration("duration", time.Millisecond)
			}
			return a
		},
	}))
	tries := 0
	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		tries++
		if tries == 1 {
			return errors.New("deadlock detected")
		}
		return nil
	})
	// Logging inside Retry writes one line per in-process try.
	chain := consumer.Chain(h,
		middleware.Retry(retry.Policy{MaxAttempts: 2, InitialInterval: time.Millisecond}),
		middleware.Logging(logger))
	ctx := consumer.WithAttemptState(consumer.WithName(context.Background(), "ledger"))
	err := chain.Handle(ctx, &consumer.Message{ID: "pay-7", Source: "payments", Attempt: 1})
	fmt.Println("error:", err)
	// Output:
	// level=WARN msg="message failed" consumer=ledger message_id=pay-7 source=payments attempt=1 try=1 duration=1ms outcome=retryable error="deadlock detected"
	// level=INFO msg="message processed" consumer=ledger message_id=pay-7 source=payments attempt=1 try=2 duration=1ms outcome=processed
	// error: <nil>
}
