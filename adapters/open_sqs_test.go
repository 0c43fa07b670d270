package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	smithymw "github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/sqs"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// dedupIDs records the MessageDeduplicationIds a client sends to a queue.
type dedupIDs struct {
	mu  sync.Mutex
	ids []string
}

func (d *dedupIDs) middleware(st *smithymw.Stack) error {
	return st.Initialize.Add(smithymw.InitializeMiddlewareFunc("oncely-test-dedup",
		func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
			if b, ok := in.Parameters.(*awssqs.SendMessageBatchInput); ok {
				d.mu.Lock()
				for _, e := range b.Entries {
					d.ids = append(d.ids, aws.ToString(e.MessageDeduplicationId))
				}
				d.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), smithymw.Before)
}

func (d *dedupIDs) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ids...)
}

// TestSQSFIFORedriveDedup: on a FIFO queue a message published, dead-lettered
// and redriven twice within SQS's five-minute deduplication window comes back
// every time: each redrive sends its own MessageDeduplicationId (neither the
// message ID nor an earlier redrive's), while the message ID stays.
//
// local-aws-sqs 2.0.2 deduplicates only against messages still in the queue,
// not for five minutes after a deletion as SQS does, so on the emulator the
// message would come back even with the message ID as the deduplication ID:
// the recorded IDs are what the test asserts for that.
func TestSQSFIFORedriveDedup(t *testing.T) {
	endpoint := envtest.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	u, err := url.Parse("sqs://us-east-1?endpoint=" + endpoint + "&visibility_timeout=5s&wait=1")
	require.NoError(t, err)
	opened, err := openSQS(ctx, u, options{logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	b := opened.(*sqsBroker)
	defer func() { _ = b.Close() }()
	rec := &dedupIDs{}
	b.client = awssqs.New(b.client.Options(), func(o *awssqs.Options) { o.APIOptions = append(o.APIOptions, rec.middleware) })
	b.cfg.Client = b.client

	source := fmt.Sprintf("oncely-redrive-%08x.fifo", rand.Uint32())
	const name = "ledger"
	require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: "m-1", Key: "g", Body: []byte("body")}))
	// deadLetter receives the message once and dead-letters it.
	deadLetter := func() {
		t.Helper()
		src, err := b.Source(ctx, source, name)
		require.NoError(t, err)
		d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
		m := d.Message()
		require.Equal(t, "m-1", m.ID)
		require.Equal(t, "body", string(m.Body))
		h := consumer.FailureHeaders(m, consumer.Failure{Consumer: name, Err: errors.New("boom"), Reason: consumer.ReasonPermanent, NextAttempt: m.Attempt})
		require.NoError(t, d.DeadLetter(ctx, h))
		require.NoError(t, src.Close(ctx))
	}
	deadLetter()
	res, err := b.Redrive(ctx, source, name, RedriveOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Redriven)
	deadLetter() // the redriven copy came back and failed again
	res, err = b.Redrive(ctx, source, name, RedriveOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Redriven)

	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	require.Equal(t, "m-1", d.Message().ID, "the second redrive within five minutes came back too")
	require.NoError(t, d.Ack(ctx))
	adaptertest.AssertQuiet(t, src, time.Second)
	require.NoError(t, src.Close(ctx))

	ids := rec.all()
	require.Len(t, ids, 3, "one publish and two redrives")
	require.Equal(t, "m-1", ids[0], "Publish deduplicates by message ID")
	require.NotEqual(t, "m-1", ids[1])
	require.NotEqual(t, "m-1", ids[2])
	require.NotEqual(t, ids[1], ids[2], "each redrive has its own deduplication ID")
}

// TestSQSFIFOPublishLongID: a FIFO publish of an ID SQS does not take as a
// deduplication ID (over 128 characters, or not ASCII) is deduplicated by its
// SHA-256 and arrives; twice published, it is kept once.
func TestSQSFIFOPublishLongID(t *testing.T) {
	endpoint := envtest.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u, err := url.Parse("sqs://us-east-1?endpoint=" + endpoint + "&wait=1")
	require.NoError(t, err)
	b, err := openSQS(ctx, u, options{logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer func() { _ = b.Close() }()
	source := fmt.Sprintf("oncely-longid-%08x.fifo", rand.Uint32())
	long := strings.Repeat("é", 100) // 200 bytes
	m := &consumer.Message{ID: long, Key: "g", Body: []byte("body")}
	require.NoError(t, b.Publish(ctx, source, m))
	require.NoError(t, b.Publish(ctx, source, m))
	src, err := b.Source(ctx, source, "ledger")
	require.NoError(t, err)
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	require.Equal(t, long, d.Message().ID)
	require.NoError(t, d.Ack(ctx))
	adaptertest.AssertQuiet(t, src, time.Second)
	require.NoError(t, src.Close(ctx))
	require.Equal(t, "abc", publishDedupID(&consumer.Message{ID: "abc"}))
	require.Len(t, publishDedupID(m), len("sha256-")+64)
}

// TestSQSLongNames: a source and consumer name whose default dead-letter
// queue name would exceed SQS's 80 characters are refused (Source,
// DeadLetters, Backlog: sqs.ErrNameTooLong) unless dlq= names the
// dead-letter queue; with it the pair starts, dead-letters, lists and
// reports depth. Catches a broker reading dead letters from a queue other
// than the one the consumer writes to, and a name cut to fit.
func TestSQSLongNames(t *testing.T) {
	endpoint := envtest.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	suffix := rand.Uint32()
	source := fmt.Sprintf("oncely-payments-settlement-requests-%08x", suffix)
	consumerName := "ledger-postings-eu-west-1-primary"
	custom := fmt.Sprintf("oncely-custom-dlq-%08x", suffix)

	u, err := url.Parse("sqs://us-east-1?endpoint=" + endpoint + "&wait=1&dlq=" + custom)
	require.NoError(t, err)
	b, err := openSQS(ctx, u, options{logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	id := "long-" + custom
	require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: id, Body: []byte("b")}))
	src, err := b.Source(ctx, source, consumerName)
	require.NoError(t, err, "len(source)+len(consumer) = %d", len(source)+len(consumerName))
	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	headers := consumer.FailureHeaders(d.Message(), consumer.Failure{Consumer: consumerName, Err: errors.New("bad"), Reason: consumer.ReasonPermanent, NextAttempt: 1})
	require.NoError(t, d.DeadLetter(ctx, headers))
	require.NoError(t, src.Close(ctx))

	dl, err := b.DeadLetters(ctx, source, consumerName, 0)
	require.NoError(t, err)
	require.Len(t, dl, 1)
	require.Equal(t, id, dl[0].Message.ID)
	rows, err := b.Backlog(ctx, source, consumerName)
	require.NoError(t, err)
	require.Equal(t, int64(1), rows[0].DeadLetters, "depth read from %s", custom)
	qurl, err := b.(*sqsBroker).queueURL(ctx, custom, false)
	require.NoError(t, err)
	require.NotEmpty(t, qurl, "the dead letter is in %s", custom)
	require.NoError(t, b.Close())

	u, err = url.Parse("sqs://us-east-1?endpoint=" + endpoint + "&wait=1")
	require.NoError(t, err)
	refused, err := openSQS(ctx, u, options{logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	_, err = refused.Source(ctx, source, consumerName)
	require.ErrorIs(t, err, sqs.ErrNameTooLong)
	_, err = refused.DeadLetters(ctx, source, consumerName, 0)
	require.ErrorIs(t, err, sqs.ErrNameTooLong)
	_, err = refused.Backlog(ctx, source, consumerName)
	require.ErrorIs(t, err, sqs.ErrNameTooLong)
	require.NoError(t, refused.Close())

	_, err = Open(ctx, "sqs://us-east-1?endpoint="+endpoint+"&dlq=bad/name")
	require.ErrorContains(t, err, `dlq="bad/name"`)
}

// TestSQSSessionHoldsBackLaterLetters: SQS has no snapshot of a queue, so a
// dead-letter session hands out only letters sent before it opened. A
// letter dead-lettered during a redrive (a redriven copy that failed again)
// is held back and visible again once the session closes, not handed out:
// a redrive would otherwise remove it as a second copy of an ID it just
// moved, and lose the new failure. Catches a session without the cutoff.
func TestSQSSessionHoldsBackLaterLetters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u, err := url.Parse("sqs://us-east-1?endpoint=" + envtest.SQS(t) + "&visibility_timeout=5s&wait=1")
	require.NoError(t, err)
	opened, err := openSQS(ctx, u, options{logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	b := opened.(*sqsBroker)
	defer func() { _ = b.Close() }()
	source := fmt.Sprintf("oncely-holdback-%08x", rand.Uint32())
	const name = "ledger"
	dlq, err := b.deadLetterQueue(source, name)
	require.NoError(t, err)
	require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: "src", Body: []byte("x")}))
	require.NoError(t, b.Publish(ctx, dlq, &consumer.Message{ID: "before", Body: []byte("x")}))

	sess, err := b.session(ctx, source, name)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // SentTimestamp counts milliseconds
	require.NoError(t, b.Publish(ctx, dlq, &consumer.Message{ID: "after", Body: []byte("x")}))
	var ids []string
	for {
		hs, err := sess.next(ctx, 100)
		require.NoError(t, err)
		if len(hs) == 0 {
			break
		}
		for _, h := range hs {
			ids = append(ids, h.msg.ID)
		}
	}
	require.Equal(t, []string{"before"}, ids, "only the letter sent before the session opened")
	require.NoError(t, sess.close(ctx))

	dls, err := b.DeadLetters(ctx, source, name, 0)
	require.NoError(t, err)
	var left []string
	for _, d := range dls {
		left = append(left, d.Message.ID)
	}
	require.ElementsMatch(t, []string{"before", "after"}, left, "both visible again after close")
}
