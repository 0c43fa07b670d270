package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	mem "github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
)

// mwOutcomes is an Observer counting outcomes; it signals done when total
// settled events reach want.
type mwOutcomes struct {
	mu    sync.Mutex
	count map[consumer.Outcome]int
	total int
	want  int
	done  chan struct{}
}

func (o *mwOutcomes) Settled(_ context.Context, ev consumer.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.count[ev.Outcome]++
	o.total++
	if o.total == o.want {
		close(o.done)
	}
}

func (o *mwOutcomes) BreakerChanged(bool) {}

// TestChainOnRuntime runs the full recommended chain on the Consumer runtime
// over the memory broker: every message is delivered twice, and every
// message's first try fails transiently. In-process Retry absorbs the
// failures (no broker retry), Idempotency turns the second copies into
// duplicates the runtime counts, and each effect is applied once.
func TestChainOnRuntime(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 50
	b := mem.NewBroker()
	var msgs []*consumer.Message
	for i := range n {
		m := &consumer.Message{ID: fmt.Sprintf("m-%d", i), Key: fmt.Sprint(i % 5), Body: []byte("x")}
		msgs = append(msgs, m, m)
	}
	require.NoError(t, b.Publish(context.Background(), "payments", msgs...))

	var mu sync.Mutex
	tries := map[string]int{}
	effects := map[string]int{}
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		tries[m.ID]++
		if tries[m.ID] == 1 {
			return errors.New("transient")
		}
		effects[m.ID]++
		return nil
	})
	claims := mwStore(t)
	obs := &mwOutcomes{count: map[consumer.Outcome]int{}, want: 2 * n, done: make(chan struct{})}
	c, err := consumer.New(b.NewSource("payments", "ledger"), h,
		consumer.Config{Name: "ledger", Concurrency: 8, Observer: obs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		middleware.Logging(slog.New(slog.NewTextHandler(io.Discard, nil))),
		middleware.Retry(retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}),
		middleware.Timeout(10*time.Second),
		middleware.Idempotency(claims),
	)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-obs.done:
	case <-ctx.Done():
		t.Fatal("timed out waiting for settlements")
	}
	require.NoError(t, c.Stop(ctx))
	require.NoError(t, <-runErr)

	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Equal(t, map[consumer.Outcome]int{consumer.OutcomeProcessed: n, consumer.OutcomeDuplicate: n}, obs.count)
	require.Len(t, effects, n)
	for id, e := range effects {
		require.Equal(t, 1, e, id)
	}
	require.Equal(t, n, claims.Len())
	require.Empty(t, b.DeadLetters("payments", "ledger"))
}
