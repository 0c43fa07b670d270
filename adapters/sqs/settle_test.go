package sqs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// visibilities records the VisibilityTimeout of every ChangeMessageVisibility
// call a hooked client makes.
type visibilities struct {
	mu  sync.Mutex
	got []int32
}

func (v *visibilities) hook(in any) error {
	if c, ok := in.(*awssqs.ChangeMessageVisibilityInput); ok {
		v.mu.Lock()
		v.got = append(v.got, c.VisibilityTimeout)
		v.mu.Unlock()
	}
	return nil
}

func (v *visibilities) all() []int32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]int32(nil), v.got...)
}

// TestRetryDelayCapped: a retry delay over what is left of SQS's 12-hour
// visibility limit is capped in one ChangeMessageVisibility call SQS accepts,
// never refused and tried again; through the runtime, RetryAfter(13h) is
// capped to Capabilities.MaxDelay.
func TestRetryDelayCapped(t *testing.T) {
	endpoint, client := emulator(t)
	ctx := testCtx(t, 60*time.Second)
	maxSecs := int32((MaxVisibility - visibilityMargin) / time.Second)

	t.Run("Adapter", func(t *testing.T) {
		vis := &visibilities{}
		queue := uniqueQueue("cap13")
		src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 30 * time.Second, Client: hookedClient(endpoint, vis.hook)})
		publish(t, client, src.QueueURL(), &consumer.Message{ID: "c-1", Body: []byte("b")}, &consumer.Message{ID: "c-2", Body: []byte("b")})
		ds := adaptertest.ReceiveN(t, src, 2, 10*time.Second)

		require.NoError(t, ds[0].Retry(ctx, 13*time.Hour, nil))
		got := vis.all()
		require.Len(t, got, 1, "one call, accepted")
		require.LessOrEqual(t, got[0], maxSecs)
		require.GreaterOrEqual(t, got[0], maxSecs-5)

		// A delivery (as if) received 12 hours ago has nothing left: it
		// is made visible at once rather than sent an invalid visibility.
		late := ds[1].(*delivery)
		late.received = time.Now().Add(-MaxVisibility)
		require.NoError(t, late.Retry(ctx, time.Hour, nil))
		require.Equal(t, []int32{got[0], 0}, vis.all())
		other := newSource(t, endpoint, Config{QueueName: queue})
		again := adaptertest.ReceiveN(t, other, 1, 5*time.Second)
		require.Equal(t, late.msg.ID, again[0].Message().ID, "only the 13h retry stays invisible")
		require.NoError(t, again[0].Ack(ctx))
	})

	t.Run("Runtime", func(t *testing.T) {
		vis := &visibilities{}
		queue := uniqueQueue("cap13rt")
		src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 30 * time.Second, Client: hookedClient(endpoint, vis.hook)})
		publish(t, client, src.QueueURL(), &consumer.Message{ID: "rt-1", Body: []byte("b")})
		rec := &recorder{}
		stop := runConsumer(t, src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
			return consumer.RetryAfter(errors.New("later"), 13*time.Hour)
		}), consumer.Config{Observer: rec})
		adaptertest.WaitUntil(t, 20*time.Second, "the retry", func() bool { return rec.count(consumer.OutcomeRetried) == 1 })
		stop()
		require.Equal(t, []int32{int32(src.Capabilities().MaxDelay / time.Second)}, vis.all())
		require.Equal(t, 0, rec.count(consumer.OutcomeDeadLettered))
	})
}

// TestProbe: Probe answers while SQS does and fails when it does not; the
// capabilities and the consumer name are as declared.
func TestProbe(t *testing.T) {
	endpoint, _ := emulator(t)
	var down atomic.Bool
	src := newSource(t, endpoint, Config{QueueName: uniqueQueue("probe"), Client: hookedClient(endpoint, func(in any) error {
		if _, ok := in.(*awssqs.GetQueueAttributesInput); ok && down.Load() {
			return errors.New("injected: SQS does not answer")
		}
		return nil
	})})
	ctx := testCtx(t, 10*time.Second)
	require.NoError(t, src.Probe(ctx))
	down.Store(true)
	require.ErrorContains(t, src.Probe(ctx), "injected: SQS does not answer")
	caps := src.Capabilities()
	require.False(t, caps.FanOut)
	require.Zero(t, caps.Prefetch)
	require.Equal(t, "ledger", src.ConsumerName())
	_, err := consumer.New(src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }), consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "other"})
	require.Error(t, err, "a consumer name other than the Source's is refused")
}

// TestDeadLetterSendFaultKeepsOriginal: a dead-letter send that fails (made
// to fail by a middleware in the SDK's stack) deletes nothing: the original
// comes back after its visibility timeout, with its body, and nothing
// reached the dead-letter queue. Through the runtime, a failing first send
// ends with exactly one dead-letter copy and an empty source.
func TestDeadLetterSendFaultKeepsOriginal(t *testing.T) {
	endpoint, client := emulator(t)
	ctx := testCtx(t, 60*time.Second)
	var fails atomic.Int32
	var sends atomic.Int32
	hook := func(in any) error {
		if s, ok := in.(*awssqs.SendMessageInput); ok {
			sends.Add(1)
			if fails.Load() > 0 {
				fails.Add(-1)
				return errors.New("injected: dead-letter send refused " + queueNameFromURL(aws.ToString(s.QueueUrl)))
			}
		}
		return nil
	}

	t.Run("Adapter", func(t *testing.T) {
		const visibility = 2 * time.Second
		queue := uniqueQueue("dlqfault")
		a := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility, Client: hookedClient(endpoint, hook)})
		publish(t, client, a.QueueURL(), &consumer.Message{ID: "fault-1", Body: []byte("keep me")})
		d := adaptertest.ReceiveN(t, a, 1, 10*time.Second)[0]
		fails.Store(1)
		err := d.DeadLetter(ctx, deadLetterHeaders(d.Message(), 0))
		require.ErrorContains(t, err, "injected: dead-letter send refused")
		require.NotErrorIs(t, err, consumer.ErrCopyRefused, "a failed send is not a refusal for good")
		failedAt := time.Now()
		a.kill() // as a crash: nothing released, so it returns after its visibility timeout

		b := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility})
		again := adaptertest.ReceiveN(t, b, 1, 10*time.Second)[0]
		require.Equal(t, "fault-1", again.Message().ID, "the original was not deleted")
		require.Equal(t, "keep me", string(again.Message().Body))
		require.GreaterOrEqual(t, time.Since(failedAt), visibility-time.Second)
		require.Empty(t, readQueue(t, client, b.DeadLetterQueueURL(), 0, 0), "nothing reached the DLQ")
		require.NoError(t, again.Ack(ctx))
	})

	t.Run("Runtime", func(t *testing.T) {
		queue := uniqueQueue("dlqfaultrt")
		src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 5 * time.Second, Client: hookedClient(endpoint, hook)})
		publish(t, client, src.QueueURL(), &consumer.Message{ID: "fault-2", Body: []byte("keep me")})
		sends.Store(0)
		fails.Store(1)
		rec := &recorder{}
		stop := runConsumer(t, src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
			return consumer.Permanent(errors.New("poison"))
		}), consumer.Config{Observer: rec})
		adaptertest.WaitUntil(t, 30*time.Second, "the dead letter", func() bool { return rec.count(consumer.OutcomeDeadLettered) == 1 })
		stop()
		require.GreaterOrEqual(t, sends.Load(), int32(2), "the failed send was followed by one that worked")
		dl := readQueue(t, client, src.DeadLetterQueueURL(), 1, 5*time.Second)
		require.Len(t, dl, 1)
		require.Equal(t, "keep me", string(dl[0].Body))
		bl, err := src.Backlog(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), bl[0].Lag)
	})
}

// apiRefusal is an error as SQS answers when it refuses a call.
func apiRefusal(msg string) error {
	return &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.MessageNotInflight", Message: msg}
}

// TestUnansweredExtensionTriedAgain: an extension SQS did not answer (the
// call failed without an API error, as when SQS is down for a moment) is
// tried again while the visibility window is open, so the lease is kept:
// Lost stays open and another consumer gets nothing for longer than the
// window. Catches: a lease given up on the first unanswered extension, which
// cancelled the handler of a held retry during a short SQS outage and
// redelivered the message instead of applying the retry.
func TestUnansweredExtensionTriedAgain(t *testing.T) {
	endpoint, client := emulator(t)
	const visibility = 10 * time.Second // the extension goes out after 7s, 3s before the end
	queue := uniqueQueue("unanswered")
	var failed atomic.Int32
	src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility, Client: hookedClient(endpoint, func(in any) error {
		if b, ok := in.(*awssqs.ChangeMessageVisibilityBatchInput); ok && b.Entries[0].VisibilityTimeout > 0 && failed.Add(1) == 1 {
			return errors.New("injected: connection refused")
		}
		return nil
	})})
	publish(t, client, src.QueueURL(), &consumer.Message{ID: "ua-1", Body: []byte("b")})
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	other := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility})
	adaptertest.AssertQuiet(t, other, visibility+time.Second)
	require.GreaterOrEqual(t, failed.Load(), int32(2), "the failed extension was tried again")
	select {
	case <-d.(consumer.Leased).Lost():
		t.Fatal("lease given up after one unanswered extension")
	default:
	}
	require.NoError(t, d.Ack(testCtx(t, 10*time.Second)))
}

// TestReleaseAndRetryExclude: a lease given up after a refused extension is
// released (visibility 0) while the runtime may be retrying the same
// delivery. The retry waits for the release and then fails as lease lost,
// without sending its visibility change: the message is redelivered at once,
// once. Catches: the release and the retry's visibility change in flight
// together, where the release landing last cut the retry's delay short, or,
// landing after the message was received again, made that delivery visible
// to a second receiver while its handler ran.
func TestReleaseAndRetryExclude(t *testing.T) {
	endpoint, client := emulator(t)
	const visibility = 10 * time.Second
	queue := uniqueQueue("relretry")
	releasing, release := make(chan struct{}), make(chan struct{})
	var retrySent atomic.Int32
	src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility, Client: hookedClient(endpoint, func(in any) error {
		switch in := in.(type) {
		case *awssqs.ChangeMessageVisibilityBatchInput:
			if in.Entries[0].VisibilityTimeout > 0 {
				return apiRefusal("injected: extension refused")
			}
			close(releasing)
			<-release
		case *awssqs.ChangeMessageVisibilityInput:
			retrySent.Add(1)
		}
		return nil
	})})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo) // before the Source's Close, also when the test fails
	publish(t, client, src.QueueURL(), &consumer.Message{ID: "rr-1", Body: []byte("b")})
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	<-d.(consumer.Leased).Lost()
	<-releasing
	retried := make(chan error, 1)
	go func() { retried <- d.Retry(testCtx(t, 20*time.Second), 5*time.Second, nil) }()
	select {
	case err := <-retried:
		t.Fatalf("Retry returned while the release was in flight: %v", err)
	case <-time.After(time.Second):
	}
	letGo()
	err := <-retried
	require.ErrorIs(t, err, errLeaseLost)
	require.Zero(t, retrySent.Load(), "no visibility change after the lease was given up")
	other := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility})
	again := adaptertest.ReceiveN(t, other, 1, 5*time.Second)
	require.Equal(t, "rr-1", again[0].Message().ID)
	require.NoError(t, again[0].Ack(testCtx(t, 10*time.Second)))
}

// TestLostLeaseReleased: when SQS refuses an extension while the visibility
// window is still open, the lease is given up (Lost closed) and the message released
// at once, so another consumer gets it before the window would have ended.
func TestLostLeaseReleased(t *testing.T) {
	endpoint, client := emulator(t)
	const visibility = 10 * time.Second // the extension goes out after 7s, 3s before the end
	queue := uniqueQueue("lostrel")
	src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility, Client: hookedClient(endpoint, func(in any) error {
		if b, ok := in.(*awssqs.ChangeMessageVisibilityBatchInput); ok && b.Entries[0].VisibilityTimeout > 0 {
			return apiRefusal("injected: extension refused")
		}
		return nil
	})})
	publish(t, client, src.QueueURL(), &consumer.Message{ID: "lr-1", Body: []byte("b")})
	received := time.Now()
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	select {
	case <-d.(consumer.Leased).Lost():
	case <-time.After(visibility):
		t.Fatal("Lost not closed after the extension failed")
	}
	other := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility})
	again := adaptertest.ReceiveN(t, other, 1, visibility)[0]
	took := time.Since(received)
	t.Logf("redelivered %s after the receive (window %s)", took.Round(time.Millisecond), visibility)
	require.Less(t, took, visibility-time.Second, "released before the window ended")
	require.NoError(t, again.Ack(testCtx(t, 10*time.Second)))
}
