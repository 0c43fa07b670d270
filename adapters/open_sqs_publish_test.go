package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithymw "github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/sqs"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// strictSQS makes a client enforce two limits of SQS that local-aws-sqs does
// not: a batch's total payload (sqs.MaxMessageSizeDefault), whose excess
// fails the whole call, and a body with a NUL character, which fails its
// entry alone (reported in the result's Failed, the other entries sent).
func strictSQS(st *smithymw.Stack) error {
	return st.Initialize.Add(smithymw.InitializeMiddlewareFunc("oncely-test-strict-sqs",
		func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
			batch, ok := in.Parameters.(*awssqs.SendMessageBatchInput)
			if !ok {
				return next.HandleInitialize(ctx, in)
			}
			total := 0
			for _, e := range batch.Entries {
				total += sqs.MessageSize(aws.ToString(e.MessageBody), e.MessageAttributes)
			}
			if total > sqs.MaxMessageSizeDefault {
				return smithymw.InitializeOutput{}, smithymw.Metadata{}, &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.BatchRequestTooLong", Message: fmt.Sprintf("batch of %d bytes", total)}
			}
			sent := *batch
			sent.Entries = nil
			var failed []types.BatchResultErrorEntry
			for _, e := range batch.Entries {
				if strings.ContainsRune(aws.ToString(e.MessageBody), 0) {
					failed = append(failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidMessageContents"), Message: aws.String("NUL"), SenderFault: true})
					continue
				}
				sent.Entries = append(sent.Entries, e)
			}
			if len(sent.Entries) == 0 {
				return smithymw.InitializeOutput{Result: &awssqs.SendMessageBatchOutput{Failed: failed}}, smithymw.Metadata{}, nil
			}
			in.Parameters = &sent
			out, md, err := next.HandleInitialize(ctx, in)
			if res, ok := out.Result.(*awssqs.SendMessageBatchOutput); ok && err == nil {
				res.Failed = append(res.Failed, failed...)
			}
			return out, md, err
		}), smithymw.Before)
}

// strictBroker opens the SQS broker on the emulator with strictSQS.
func strictBroker(t *testing.T, ctx context.Context) *sqsBroker {
	t.Helper()
	u, err := url.Parse("sqs://us-east-1?endpoint=" + envtest.SQS(t) + "&wait=1")
	require.NoError(t, err)
	opened, err := openSQS(ctx, u, options{logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	b := opened.(*sqsBroker)
	t.Cleanup(func() { _ = b.Close() })
	b.client = awssqs.New(b.client.Options(), func(o *awssqs.Options) { o.APIOptions = append(o.APIOptions, strictSQS) })
	b.cfg.Client = b.client
	return b
}

// queued returns the IDs of the messages in queue, in receive order.
func queued(t *testing.T, ctx context.Context, b *sqsBroker, queue string) []string {
	t.Helper()
	qurl, err := b.queueURL(ctx, queue, false)
	require.NoError(t, err)
	var ids []string
	for {
		out, err := b.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(qurl), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: 60, MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return ids
		}
		for _, m := range out.Messages {
			ids = append(ids, aws.ToString(m.MessageAttributes[sqs.IDAttributeDefault].StringValue))
		}
	}
}

// A Publish of one key's messages where one would be refused by SQS alone
// sends nothing and wraps ErrMessageRefused: sending the others (SQS fails
// a bad entry of a batch alone) would put the key's next message on the
// queue before the refused one. Each case is a message SQS refuses.
func TestSQSPublishRefusesWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := strictBroker(t, ctx)
	const maxSize = 1024
	for name, bad := range map[string]*consumer.Message{
		"NUL in the body":             {Key: "k", Body: []byte("a\x00b")},
		"over MaximumMessageSize":     {Key: "k", Body: []byte(strings.Repeat("x", maxSize))},
		"empty body":                  {Key: "k"},
		"invalid UTF-8 in the body":   {Key: "k", Body: []byte("a\xffb")},
		"control character in the ID": {ID: "n+1\x01", Key: "k", Body: []byte("b")},
		"group ID SQS does not take":  {Key: "k 1", Body: []byte("b")},
	} {
		t.Run(name, func(t *testing.T) {
			queue := fmt.Sprintf("oncely-refuse-%08x.fifo", rand.Uint32())
			_, err := b.client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(queue),
				Attributes: map[string]string{"FifoQueue": "true", "MaximumMessageSize": fmt.Sprint(maxSize)}})
			require.NoError(t, err)
			if bad.ID == "" {
				bad.ID = "n+1"
			}
			err = b.Publish(ctx, queue,
				&consumer.Message{ID: "n", Key: "k", Body: []byte("a")}, bad, &consumer.Message{ID: "n+2", Key: "k", Body: []byte("c")})
			require.Empty(t, queued(t, ctx, b, queue), "nothing sent")
			require.ErrorIs(t, err, ErrMessageRefused)
			require.ErrorContains(t, err, "message 2 of 3")
		})
	}
}

// A Publish whose messages together exceed a batch's payload limit sends them
// in several batches: one batch of all would be refused as a whole, every
// time.
func TestSQSPublishSplitsLargeBatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := strictBroker(t, ctx)
	queue := fmt.Sprintf("oncely-bigbatch-%08x", rand.Uint32())
	body := []byte(strings.Repeat("x", sqs.MaxMessageSizeDefault/3))
	msgs := []*consumer.Message{{ID: "a", Key: "k", Body: body}, {ID: "b", Key: "k", Body: body}, {ID: "c", Key: "k", Body: body}}
	require.NoError(t, b.Publish(ctx, queue, msgs...))
	got := queued(t, ctx, b, queue)
	slices.Sort(got)
	require.Equal(t, []string{"a", "b", "c"}, got)
}
