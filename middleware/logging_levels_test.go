package middleware_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memorybroker "github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
)

// TestOneWarnPerFailedAttempt: with Logging and the runtime on one logger, a
// failed attempt — an outage held in place, or a retried failure — logs one
// WARN line (Logging's), the runtime's own lines about it staying at Info;
// durations are text. Catches: the runtime repeating the attempt's warning.
func TestOneWarnPerFailedAttempt(t *testing.T) {
	var logs envtest.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	b := memorybroker.NewBroker()
	require.NoError(t, b.Publish(context.Background(), "src", &consumer.Message{ID: "m-1"}))
	var calls atomic.Int32
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		switch calls.Add(1) {
		case 1, 2:
			return consumer.Unavailable(errors.New("database down"))
		case 3:
			return errors.New("deadlock detected")
		}
		return nil
	})
	c, err := consumer.New(b.NewSource("src", "test"), h, consumer.Config{
		Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"),
		Name:       "test", Concurrency: 1, BreakerThreshold: 10, Logger: log,
		Retry:         retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Jitter: retry.NoJitter},
		OutageBackoff: retry.Policy{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond},
	}, middleware.Logging(log))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	require.Eventually(t, func() bool { return calls.Load() == 4 }, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Stop(ctx))
	require.NoError(t, <-done)
	var warns []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, `"level":"WARN"`) {
			warns = append(warns, line)
		}
		require.NotRegexp(t, `"(duration|in)":[0-9]`, line, "durations are text")
	}
	require.Len(t, warns, 3, "one WARN per failed attempt (two outages, one retried failure):\n%s", logs.String())
	for i, want := range []string{"dependency unavailable", "dependency unavailable", "message failed"} {
		require.Contains(t, warns[i], `"msg":"`+want+`"`)
	}
}
