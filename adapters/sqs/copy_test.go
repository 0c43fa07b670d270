package sqs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

var (
	_ consumer.Prober        = (*Source)(nil)
	_ consumer.ConsumerNamer = (*Source)(nil)
	_ consumer.CopyTrimmer   = (*delivery)(nil)
	_ consumer.Leased        = (*delivery)(nil)
)

// createQueue creates a queue with attrs and returns its URL.
func createQueue(t testing.TB, client *awssqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := client.CreateQueue(testCtx(t, 10*time.Second), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	require.NoError(t, err)
	return aws.ToString(out.QueueUrl)
}

// deadLetterHeaders are the headers of a dead-letter copy of m with a stack
// of stack bytes.
func deadLetterHeaders(m *consumer.Message, stack int) map[string]string {
	h := consumer.FailureHeaders(m, consumer.Failure{Consumer: "ledger", Err: errors.New("boom"), Reason: consumer.ReasonExhausted, NextAttempt: m.Attempt})
	h[consumer.HeaderStack] = strings.Repeat("s", stack)
	return h
}

// TestDeadLetterCopyFits: a message just under SQS's size limit whose
// failure attributes push its dead-letter copy over it is trimmed before the
// send: first the stack goes, and when that is not enough the body is
// replaced by the size and SHA-256 markers, the failure context kept. A copy
// SQS refuses as too large (its limit is lower than configured) is trimmed
// the same way and sent again. Each reports CopyTrimmed.
func TestDeadLetterCopyFits(t *testing.T) {
	endpoint, client := emulator(t)
	const limit = 4096
	small := map[string]string{"MaximumMessageSize": strconv.Itoa(limit)}
	ctx := testCtx(t, 60*time.Second)

	// receive publishes one message with a body of size bytes to a new
	// queue (and its dead-letter queue) with limit, and receives it.
	var sends atomic.Int32
	countSends := func(in any) error {
		if _, ok := in.(*awssqs.SendMessageInput); ok {
			sends.Add(1)
		}
		return nil
	}
	receive := func(t *testing.T, cfg Config, size int) (*Source, *delivery) {
		sends.Store(0)
		cfg.Client = hookedClient(endpoint, countSends)
		queue := uniqueQueue("big")
		dlq := dlqName(queue, "ledger")
		createQueue(t, client, dlq, small)
		if cfg.MaxMessageSize == 0 {
			createQueue(t, client, queue, small)
		}
		cfg.QueueName = queue
		src := newSource(t, endpoint, cfg)
		publish(t, client, src.QueueURL(), &consumer.Message{ID: "big-1", Body: []byte(strings.Repeat("b", size))})
		d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0].(*delivery)
		require.LessOrEqual(t, MessageSize(d.body, d.attrs), limit)
		return src, d
	}
	dead := func(t *testing.T, src *Source) (*consumer.Message, string) {
		dl := readQueue(t, client, src.DeadLetterQueueURL(), 1, 5*time.Second)
		require.Len(t, dl, 1)
		bl, err := src.Backlog(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), bl[0].Lag, "the original is deleted")
		return dl[0], dl[0].Header(consumer.HeaderError)
	}

	t.Run("StackDropped", func(t *testing.T) {
		src, d := receive(t, Config{}, limit-1000)
		require.NoError(t, d.DeadLetter(ctx, deadLetterHeaders(d.msg, 2000)))
		require.True(t, d.CopyTrimmed())
		require.Equal(t, int32(1), sends.Load(), "trimmed before the send")
		m, errHeader := dead(t, src)
		require.Equal(t, string(d.msg.Body), string(m.Body), "the body is kept")
		require.Empty(t, m.Header(consumer.HeaderStack))
		require.Equal(t, "boom", errHeader)
		require.Equal(t, consumer.ReasonExhausted, m.Header(consumer.HeaderDeadLetterReason))
	})
	t.Run("BodyRemoved", func(t *testing.T) {
		src, d := receive(t, Config{}, limit-100) // the failure context alone is ~400 bytes
		require.NoError(t, d.DeadLetter(ctx, deadLetterHeaders(d.msg, 2000)))
		require.True(t, d.CopyTrimmed())
		require.Equal(t, int32(1), sends.Load(), "trimmed before the send")
		m, errHeader := dead(t, src)
		sum := sha256.Sum256(d.msg.Body)
		require.Equal(t, removedBody, string(m.Body))
		require.Equal(t, strconv.Itoa(len(d.msg.Body)), m.Header(consumer.HeaderBodyRemovedSize))
		require.Equal(t, hex.EncodeToString(sum[:]), m.Header(consumer.HeaderBodyRemovedSHA256))
		require.Equal(t, "boom", errHeader)
		require.Equal(t, "big-1", m.ID)
		require.Equal(t, src.queue, m.Header(consumer.HeaderOriginalSource))
	})
	t.Run("RefusedBySQS", func(t *testing.T) {
		// The adapter believes 1 MiB; the dead-letter queue takes 4 KiB.
		src, d := receive(t, Config{MaxMessageSize: MaxMessageSizeDefault}, limit-100)
		require.NoError(t, d.DeadLetter(ctx, deadLetterHeaders(d.msg, 2000)))
		require.True(t, d.CopyTrimmed())
		require.Equal(t, int32(3), sends.Load(), "refused as it was and without the stack (the short error needs no cut); sent with the body removed")
		m, _ := dead(t, src)
		require.Equal(t, removedBody, string(m.Body))
		require.Equal(t, strconv.Itoa(len(d.msg.Body)), m.Header(consumer.HeaderBodyRemovedSize))
	})
	t.Run("ProducerAttributeRemoved", func(t *testing.T) {
		queue := uniqueQueue("wide")
		dlq := dlqName(queue, "ledger")
		createQueue(t, client, dlq, small)
		createQueue(t, client, queue, small)
		src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 2 * time.Second})
		// An attribute of the original fills the limit: removing the body
		// cannot make room for the failure context, removing it does.
		note := strings.Repeat("n", limit-200)
		publish(t, client, src.QueueURL(), &consumer.Message{ID: "wide-1", Key: "k", Body: []byte("b"), Headers: map[string]string{"note": note}})
		d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
		require.NoError(t, d.DeadLetter(ctx, deadLetterHeaders(d.Message(), 0)))
		require.True(t, d.(*delivery).CopyTrimmed())
		m, errHeader := dead(t, src)
		require.Equal(t, "b", string(m.Body), "the body stays: removing it would not make the copy smaller")
		require.Empty(t, m.Header("note"))
		require.Equal(t, fmt.Sprintf(`{"note":%d}`, len(note)), m.Header(consumer.HeaderHeadersRemoved))
		require.Equal(t, "wide-1", m.ID)
		require.Equal(t, "k", m.Key, "the key attribute stays")
		require.Equal(t, "boom", errHeader)
	})
	t.Run("NothingFits", func(t *testing.T) {
		queue := uniqueQueue("huge")
		dlq := dlqName(queue, "ledger")
		createQueue(t, client, dlq, small)
		createQueue(t, client, queue, small)
		src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 2 * time.Second})
		// The ID attribute, which is never removed, fills the limit.
		id := "huge-" + strings.Repeat("i", limit-200)
		publish(t, client, src.QueueURL(), &consumer.Message{ID: id, Body: []byte("b")})
		d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
		err := d.DeadLetter(ctx, deadLetterHeaders(d.Message(), 0))
		require.ErrorIs(t, err, consumer.ErrCopyRefused)
		require.False(t, d.(*delivery).CopyTrimmed())
		require.NoError(t, src.Close(ctx))
		again := newSource(t, endpoint, Config{QueueName: queue})
		require.Equal(t, id, adaptertest.ReceiveN(t, again, 1, 5*time.Second)[0].Message().ID, "the original was not deleted")
		require.Empty(t, readQueue(t, client, src.DeadLetterQueueURL(), 0, 0))
	})
}

// TestRuntimeReportsTrimmed: through the runtime, a dead-letter copy trimmed
// to fit is reported in Event.Trimmed.
func TestRuntimeReportsTrimmed(t *testing.T) {
	endpoint, client := emulator(t)
	const limit = 4096
	small := map[string]string{"MaximumMessageSize": strconv.Itoa(limit)}
	queue := uniqueQueue("trim")
	dlq := dlqName(queue, "ledger")
	createQueue(t, client, dlq, small)
	createQueue(t, client, queue, small)
	src := newSource(t, endpoint, Config{QueueName: queue})
	publish(t, client, src.QueueURL(), &consumer.Message{ID: "t-1", Body: []byte(strings.Repeat("b", limit-100))})
	var mu sync.Mutex
	var events []consumer.Event
	stop := runConsumer(t, src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		return consumer.Permanent(errors.New(strings.Repeat("e", 1000)))
	}), consumer.Config{Observer: observerFunc(func(ev consumer.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})})
	adaptertest.WaitUntil(t, 20*time.Second, "the dead-letter settlement", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) > 0
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, events, 1)
	require.Equal(t, consumer.OutcomeDeadLettered, events[0].Outcome)
	require.True(t, events[0].Trimmed)
	dl := readQueue(t, client, src.DeadLetterQueueURL(), 1, 5*time.Second)
	require.Len(t, dl, 1)
	require.NotEmpty(t, dl[0].Header(consumer.HeaderBodyRemovedSHA256))
}
