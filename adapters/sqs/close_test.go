package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	smithymw "github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestCloseWithReceiveOutstanding: five deliveries are held unsettled and one
// more Receive is outstanding (a long poll in flight, as the runtime always
// has one) when the Source closes. Close puts the five back as copies, lets
// the poll finish (on SQS it ends at once, on the copies; local-aws-sqs
// waits out its WaitTimeSeconds) and puts back what it took too, so a new Source gets all five at once, each with its Attempt
// unchanged.
func TestCloseWithReceiveOutstanding(t *testing.T) {
	endpoint, client := emulator(t)
	const n = 5
	queue := uniqueQueue("closerecv")
	// A visibility timeout far longer than the test: a stranded message
	// would not come back within it.
	a := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute, WaitTimeSeconds: 3})
	publish(t, client, a.QueueURL(), messages("close", n, func(int) string { return "" })...)
	ctx := testCtx(t, 60*time.Second)

	got := adaptertest.ReceiveN(t, a, n, 10*time.Second)
	before := make(map[string]int, n)
	for _, d := range got {
		before[d.Message().ID] = d.Message().Attempt
	}
	outstanding := make(chan error, 1)
	go func() {
		ds, err := a.Receive(ctx, 10)
		if err == nil {
			err = fmt.Errorf("the outstanding Receive returned %d deliveries", len(ds))
		}
		outstanding <- err
	}()
	adaptertest.WaitUntil(t, 5*time.Second, "a receive call in flight", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.inflight > 0
	})

	closed := time.Now()
	require.NoError(t, a.Close(ctx))
	closeTook := time.Since(closed)
	require.ErrorIs(t, <-outstanding, consumer.ErrSourceClosed)

	b := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute})
	again := adaptertest.ReceiveN(t, b, n, 5*time.Second)
	redelivered := time.Since(closed)
	t.Logf("Close took %s; all %d redelivered %s after Close began", closeTook.Round(time.Millisecond), n, redelivered.Round(time.Millisecond))
	for _, d := range again {
		m := d.Message()
		w, ok := before[m.ID]
		require.True(t, ok, "unexpected %s", m.ID)
		require.Equal(t, w, m.Attempt, "%s: Attempt after a clean close", m.ID)
		require.NoError(t, d.Ack(ctx))
	}
	adaptertest.AssertQuiet(t, b, time.Second)
}

// TestCloseTwice: a second Close returns at once and releases nothing twice.
func TestCloseTwice(t *testing.T) {
	endpoint, _ := emulator(t)
	a := newSource(t, endpoint, Config{QueueName: uniqueQueue("close2")})
	ctx := testCtx(t, 30*time.Second)
	require.NoError(t, a.Close(ctx))
	require.NoError(t, a.Close(ctx))
	_, err := a.Receive(ctx, 1)
	require.True(t, errors.Is(err, consumer.ErrSourceClosed), "Receive after Close: %v", err)
}

// TestCloseFIFOWithReceiveOutstanding: on a FIFO queue Close waits for the
// poll in flight, then releases by visibility (a copy would go to the back of
// its group): every message comes back at once, in group order, its Attempt
// raised by that one receive (documented).
func TestCloseFIFOWithReceiveOutstanding(t *testing.T) {
	endpoint, client := emulator(t)
	const n = 5
	queue := uniqueQueue("closefifo") + ".fifo"
	a := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute, WaitTimeSeconds: 2, Receivers: 1})
	publish(t, client, a.QueueURL(), messages("fifo", n, func(int) string { return "g" })...)
	ctx := testCtx(t, 60*time.Second)
	got := adaptertest.ReceiveN(t, a, n, 10*time.Second)
	go func() { _, _ = a.Receive(ctx, 10) }()
	adaptertest.WaitUntil(t, 5*time.Second, "a receive call in flight", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.inflight > 0
	})
	require.NoError(t, a.Close(ctx))
	b := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute, Receivers: 1})
	again := adaptertest.ReceiveN(t, b, n, 5*time.Second)
	for i, d := range again {
		require.Equal(t, got[i].Message().ID, d.Message().ID, "group order")
		require.Equal(t, got[i].Message().Attempt+1, d.Message().Attempt)
		require.NoError(t, d.Ack(ctx))
	}
}

// TestCloseCopyTooLarge: a message whose put-back copy (its attributes plus
// oncely-attempt) would not fit the queue's size limit is released by
// visibility instead: it comes back at once, its next receive counted.
func TestCloseCopyTooLarge(t *testing.T) {
	endpoint, client := emulator(t)
	const limit = 1024
	queue := uniqueQueue("closebig")
	createQueue(t, client, queue, map[string]string{"MaximumMessageSize": strconv.Itoa(limit)})
	a := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute})
	big := &consumer.Message{ID: "big", Body: []byte(strings.Repeat("b", limit-40))}
	small := &consumer.Message{ID: "small", Body: []byte("b")}
	publish(t, client, a.QueueURL(), big, small)
	ctx := testCtx(t, 30*time.Second)
	adaptertest.ReceiveN(t, a, 2, 10*time.Second)
	require.NoError(t, a.Close(ctx))

	b := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute})
	attempts := map[string]int{}
	for _, d := range adaptertest.ReceiveN(t, b, 2, 5*time.Second) {
		attempts[d.Message().ID] = d.Message().Attempt
		require.NoError(t, d.Ack(ctx))
	}
	require.Equal(t, map[string]int{"big": 2, "small": 1}, attempts)
}

// TestCloseCopyRejected: SQS rejects one entry of the batch that puts the
// unsettled deliveries back. Close deletes only the originals whose copy SQS
// confirmed and releases the other by visibility: a new Source gets all three
// at once, the rejected one with its next receive counted.
func TestCloseCopyRejected(t *testing.T) {
	endpoint, client := emulator(t)
	queue := uniqueQueue("closereject")
	rejecting := entryRejectingClient(endpoint, func(e types.SendMessageBatchRequestEntry) bool {
		return aws.ToString(e.MessageAttributes[IDAttributeDefault].StringValue) == "reject-0001"
	})
	a := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute, Client: rejecting})
	publish(t, client, a.QueueURL(), messages("reject", 3, func(int) string { return "" })...)
	ctx := testCtx(t, 30*time.Second)
	adaptertest.ReceiveN(t, a, 3, 10*time.Second)
	err := a.Close(ctx)
	require.ErrorContains(t, err, "copy of reject-0001", "Close reports the copy SQS rejected")

	b := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Minute})
	attempts := map[string]int{}
	for _, d := range adaptertest.ReceiveN(t, b, 3, 5*time.Second) {
		attempts[d.Message().ID] = d.Message().Attempt
		require.NoError(t, d.Ack(ctx))
	}
	require.Equal(t, map[string]int{"reject-0000": 1, "reject-0001": 2, "reject-0002": 1}, attempts)
	adaptertest.AssertQuiet(t, b, time.Second)
}

// entryRejectingClient returns a client for endpoint whose SendMessageBatch
// calls do not send the entries reject picks and report them as failed in
// the call's result, as SQS reports an entry it refuses.
func entryRejectingClient(endpoint string, reject func(types.SendMessageBatchRequestEntry) bool) *awssqs.Client {
	return awssqs.New(awssqs.Options{
		Region:       RegionDefault,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("oncely", "oncely", ""),
		APIOptions: []func(*smithymw.Stack) error{func(st *smithymw.Stack) error {
			return st.Initialize.Add(smithymw.InitializeMiddlewareFunc("oncely-test-reject-entries",
				func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
					batch, ok := in.Parameters.(*awssqs.SendMessageBatchInput)
					if !ok {
						return next.HandleInitialize(ctx, in)
					}
					sent := *batch
					sent.Entries = nil
					var failed []types.BatchResultErrorEntry
					for _, e := range batch.Entries {
						if reject(e) {
							failed = append(failed, types.BatchResultErrorEntry{
								Id: e.Id, Code: aws.String("InvalidParameterValue"), Message: aws.String("rejected by the test"), SenderFault: true,
							})
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
		}},
	})
}
