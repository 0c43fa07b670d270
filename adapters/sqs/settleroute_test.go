package sqs

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
	"github.com/oncely/oncely/retry"
)

// breakerRecorder is a recorder that also counts the breaker's changes.
type breakerRecorder struct {
	recorder
	opened, closed atomic.Int32
}

func (r *breakerRecorder) BreakerChanged(open bool) {
	if open {
		r.opened.Add(1)
	} else {
		r.closed.Add(1)
	}
}

// TestRuntimeRetryVisibilityFailsSQSUp: through the runtime, a retry whose
// ChangeMessageVisibility fails while SQS answers (the probe's
// GetQueueAttributes succeeds) counts as an attempt and is tried again after
// the retry policy's delay; when attempts run out the message is
// dead-lettered as retry-refused, with its body, and the source is left
// empty (docs/delivery-semantics.md, "retry copy fails while the broker
// answers"). Catches: a failing visibility change taken for an outage and
// held forever (no dead letter, breaker open), or retried without counting
// attempts.
func TestRuntimeRetryVisibilityFailsSQSUp(t *testing.T) {
	endpoint, client := emulator(t)
	queue := uniqueQueue("cmvup")
	var refused atomic.Int32
	src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 10 * time.Second, Client: hookedClient(endpoint, func(in any) error {
		if _, ok := in.(*awssqs.ChangeMessageVisibilityInput); ok {
			refused.Add(1)
			return errors.New("injected: ChangeMessageVisibility failed")
		}
		return nil
	})})
	publish(t, client, src.QueueURL(), &consumer.Message{ID: "cmv-1", Key: "k", Body: []byte("keep me")})
	var handled atomic.Int32
	rec := &breakerRecorder{}
	stop := runConsumer(t, src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		handled.Add(1)
		return errors.New("handler failed")
	}), consumer.Config{Observer: rec, BreakerThreshold: 1,
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond, Jitter: retry.NoJitter}})
	dl := readQueue(t, client, src.DeadLetterQueueURL(), 1, 20*time.Second)
	adaptertest.WaitUntil(t, 10*time.Second, "the dead-letter settlement", func() bool { return rec.count(consumer.OutcomeDeadLettered) == 1 })
	stop()

	require.Len(t, dl, 1)
	require.Equal(t, "cmv-1", dl[0].ID)
	require.Equal(t, "keep me", string(dl[0].Body))
	require.Equal(t, consumer.ReasonRetryRefused, dl[0].Header(consumer.HeaderDeadLetterReason))
	require.Contains(t, dl[0].Header(consumer.HeaderError), "injected: ChangeMessageVisibility failed")
	require.Equal(t, int32(1), handled.Load(), "handled once: the failed retries counted as its attempts")
	require.Equal(t, int32(2), refused.Load(), "one visibility change per attempt left (MaxAttempts 3)")
	require.Zero(t, rec.opened.Load(), "SQS answered: no outage")
	bl, err := src.Backlog(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	require.Equal(t, int64(0), bl[0].Lag, "the original was deleted")
}

// TestRuntimeSQSDownHoldsRetry: through the runtime, SQS going down (its
// endpoint, through a proxy, resets every connection) while a retry's
// ChangeMessageVisibility is due is an outage: the delivery is held
// unsettled, the breaker opens, nothing is dead-lettered; once SQS answers
// again the breaker closes by itself and the retry is applied, so the
// message comes back at a later attempt and is processed. Catches: SQS down taken
// for the message's fault (attempts spent, dead-lettered retry-refused), a
// breaker that never opens, or one that never closes. A CI run once saw the
// message processed twice (attempts 2 and 3, 14 ms apart): a lease given up
// on a failed extension during the outage was released after the retry was
// applied (see TestReleaseAndRetryExclude).
func TestRuntimeSQSDownHoldsRetry(t *testing.T) {
	endpoint, client := emulator(t)
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	proxy, err := proxytest.New(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	src := newSource(t, "http://"+proxy.Addr(), Config{QueueName: uniqueQueue("sqsdown"), VisibilityTimeout: 30 * time.Second})
	publish(t, client, src.QueueURL(), &consumer.Message{ID: "down-1", Key: "k", Body: []byte("b")})

	var mu sync.Mutex
	var attempts []int
	rec := &breakerRecorder{}
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		attempts = append(attempts, m.Attempt)
		mu.Unlock()
		if m.Attempt == 1 {
			proxy.Refuse() // SQS goes down before the retry's visibility change
			proxy.Cut()
			return errors.New("handler failed")
		}
		return nil
	}), consumer.Config{Observer: rec, BreakerThreshold: 1,
		OutageBackoff: retry.Policy{InitialInterval: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
		Retry:         retry.Policy{MaxAttempts: 2, InitialInterval: time.Second, MaxInterval: time.Second, Jitter: retry.NoJitter}})
	adaptertest.WaitUntil(t, 30*time.Second, "the breaker to open", func() bool { return rec.opened.Load() == 1 })
	require.Zero(t, rec.count(consumer.OutcomeRetried), "no retry applied while SQS is down")
	require.Zero(t, rec.count(consumer.OutcomeDeadLettered))
	proxy.Accept()
	adaptertest.WaitUntil(t, 60*time.Second, "the message to be processed", func() bool { return rec.count(consumer.OutcomeProcessed) >= 1 })
	stop()
	require.Equal(t, 1, rec.count(consumer.OutcomeProcessed), "processed once, not redelivered while its retry ran")

	mu.Lock()
	// Handled twice: attempt 1, then once the held retry was applied. The
	// second attempt is ApproximateReceiveCount, which is 2 — or more when a
	// long poll the cut connection abandoned was served the message first
	// (SQS serves a poll whose caller went away), as one CI run saw.
	require.Len(t, attempts, 2, "the held retry was applied once SQS answered: %v", attempts)
	require.Equal(t, 1, attempts[0])
	require.GreaterOrEqual(t, attempts[1], 2, "the retry came back as a later attempt")
	mu.Unlock()
	require.Equal(t, int32(1), rec.closed.Load(), "the breaker closed by itself")
	require.Equal(t, 1, rec.count(consumer.OutcomeRetried))
	require.Zero(t, rec.count(consumer.OutcomeDeadLettered))
	require.Empty(t, readQueue(t, client, src.DeadLetterQueueURL(), 0, 0), "nothing dead-lettered")
}
