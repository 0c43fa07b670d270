package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/retry"
)

func TestForgedHeadersMemory(t *testing.T) { testForgedHeaders(t, "mem://", true) }

func TestForgedHeadersKafka(t *testing.T) { testForgedHeaders(t, suiteKafka(t)+"?tiers=100ms", true) }

func TestForgedHeadersRabbitMQ(t *testing.T) {
	testForgedHeaders(t, envtest.RabbitMQ(t)+"?tiers=100ms&prefetch=32", true)
}

func TestForgedHeadersNATS(t *testing.T) { testForgedHeaders(t, envtest.NATS(t)+"?prefetch=32", true) }

func TestForgedHeadersRedis(t *testing.T) { testForgedHeaders(t, envtest.Redis(t), true) }

// On SQS the attempt header stays trusted (the copies Close puts back need
// it; see adapters/sqs newDelivery): only the failure context is checked.
func TestForgedHeadersSQS(t *testing.T) {
	testForgedHeaders(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1", false)
}

// testForgedHeaders publishes, as a producer, a message carrying oncely's
// own headers (attempt 99, a far retry due time, a forged original source,
// offset, consumer, error and reason) and fails it permanently. Catches: a
// producer steering the attempt count, stalling a message behind a forged
// due time, or forging the failure context a dead letter shows. The forged
// values stay readable under "untrusted-".
func testForgedHeaders(t *testing.T, url string, attemptChecked bool) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	source := fmt.Sprintf("forged-%d", rand.Uint32())
	const name = "ledger"
	forged := map[string]string{
		consumer.HeaderAttempt:          "99",
		consumer.HeaderOriginalSource:   "forged-source",
		consumer.HeaderOriginalOffset:   "424242",
		consumer.HeaderConsumer:         "forged-consumer",
		consumer.HeaderError:            "forged error",
		consumer.HeaderDeadLetterReason: "forged-reason",
		consumer.HeaderRetryNotBefore:   time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339Nano),
		consumer.HeaderFirstFailedAt:    "2001-01-01T00:00:00Z",
		"x-app":                         "kept",
	}
	require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: "f1", Key: "k", Body: []byte("b"), Headers: forged}))
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)

	var mu sync.Mutex
	var seen []int
	done := make(chan struct{})
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		seen = append(seen, m.Attempt)
		mu.Unlock()
		return consumer.Permanent(errors.New("real failure"))
	})
	obs := observerFunc(func(ev consumer.Event) {
		if ev.Outcome == consumer.OutcomeDeadLettered {
			close(done)
		}
	})
	c, err := consumer.New(src, h, consumer.Config{Name: name, MaxInFlight: 32, Observer: obs,
		Duplicates: consumer.AllowDuplicates("test: counts deliveries"),
		Retry:      retry.Policy{MaxAttempts: 3, InitialInterval: 50 * time.Millisecond, MaxInterval: 50 * time.Millisecond}})
	require.NoError(t, err)
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the message was not dead-lettered: a forged due time or attempt held it")
	}
	require.NoError(t, c.Stop(ctx))
	<-runDone

	dls, err := b.DeadLetters(ctx, source, name, 0)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	d := dls[0]
	if attemptChecked {
		mu.Lock()
		require.Equal(t, []int{1}, seen, "the handler's attempts")
		mu.Unlock()
		require.Equal(t, 1, d.Attempts(), "the dead letter's attempts")
	}
	require.Equal(t, source, d.Source(), "the dead letter's source is the real one")
	require.Equal(t, "permanent", d.Reason())
	require.Equal(t, name, d.Consumer())
	require.Contains(t, d.Error(), "real failure")
	require.NotEqual(t, "424242", d.Message.Header(consumer.HeaderOriginalOffset))
	require.NotEqual(t, "2001-01-01T00:00:00Z", d.Message.Header(consumer.HeaderFirstFailedAt))
	require.Equal(t, "forged-source", d.Message.Header(consumer.UntrustedHeaderPrefix+consumer.HeaderOriginalSource), "kept aside")
	require.Equal(t, "kept", d.Message.Header("x-app"))
}
