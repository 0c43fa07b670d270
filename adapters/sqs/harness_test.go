package sqs

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	smithymw "github.com/aws/smithy-go/middleware"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of the SDK's HTTP client.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.Cleanup(func(code int) {
			if err := logCheck.Err(); err != nil && code == 0 {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(code)
		}),
	)
}

// emulator returns the emulator's endpoint and a client for it, or skips
// (fails under CI) when it does not answer.
func emulator(t testing.TB) (string, *awssqs.Client) {
	t.Helper()
	endpoint := envtest.SQS(t)
	return endpoint, newTestClient(endpoint, nil)
}

func newTestClient(endpoint string, rt http.RoundTripper) *awssqs.Client {
	o := awssqs.Options{
		Region:       RegionDefault,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("oncely", "oncely", ""),
	}
	if rt != nil {
		o.HTTPClient = &http.Client{Transport: rt}
	}
	return awssqs.New(o)
}

// hookedClient returns a client for endpoint whose every call first passes
// its input (*awssqs.SendMessageInput, …) to hook, through the SDK's
// middleware stack: an error from hook fails the call before it is sent,
// and is not retried by the SDK.
func hookedClient(endpoint string, hook func(input any) error) *awssqs.Client {
	return awssqs.New(awssqs.Options{
		Region:       RegionDefault,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("oncely", "oncely", ""),
		APIOptions: []func(*smithymw.Stack) error{func(st *smithymw.Stack) error {
			return st.Initialize.Add(smithymw.InitializeMiddlewareFunc("oncely-test-hook",
				func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
					if err := hook(in.Parameters); err != nil {
						return smithymw.InitializeOutput{}, smithymw.Metadata{}, err
					}
					return next.HandleInitialize(ctx, in)
				}), smithymw.Before)
		}},
	})
}

// uniqueQueue returns a queue name no other test uses.
func uniqueQueue(prefix string) string {
	return fmt.Sprintf("oncely-%s-%08x", prefix, rand.Uint32())
}

// logCheck sees every line the tests' loggers write (see envtest.LogCheck);
// TestMain fails the run when a line carried a time.Duration attribute.
var logCheck = envtest.NewLogCheck(slog.DiscardHandler)

func quietLogger() *slog.Logger { return slog.New(logCheck) }

// harness connects the adapter conformance suite to the emulator.
//
// It reads each source with one receiver: the suite checks that messages
// with one key are handled in publish order, which a standard SQS queue
// keeps only on a best-effort basis; the emulator returns messages in send
// order, but concurrent receive calls may come back in either order.
type harness struct {
	endpoint string
	client   *awssqs.Client

	mu    sync.Mutex
	fails map[string]adaptertest.CopyOp // source queue → the copy to fail next
}

var _ adaptertest.CopyFaulter = (*harness)(nil)

// FailNextCopy makes the next copy of op for source fail in the SDK's
// middleware stack of the Sources NewSource opens: a retry's
// ChangeMessageVisibility (SQS retries by visibility, so that call is the
// retry's "copy") or a dead-letter SendMessage. The call fails before it is
// sent; the SDK does not retry it.
func (h *harness) FailNextCopy(t testing.TB, source string, op adaptertest.CopyOp) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fails == nil {
		h.fails = make(map[string]adaptertest.CopyOp)
	}
	h.fails[source] = op
}

// hook fails the call armed by FailNextCopy.
func (h *harness) hook(in any) error {
	var op adaptertest.CopyOp
	var queue string
	switch in := in.(type) {
	case *awssqs.ChangeMessageVisibilityInput:
		op, queue = adaptertest.CopyRetry, queueNameFromURL(aws.ToString(in.QueueUrl))
	case *awssqs.SendMessageInput:
		op, queue = adaptertest.CopyDeadLetter, queueNameFromURL(aws.ToString(in.QueueUrl))
	default:
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for source, armed := range h.fails {
		dlq := dlqName(source, adaptertest.ConsumerName)
		if armed == op && (queue == source || queue == dlq) {
			delete(h.fails, source)
			return fmt.Errorf("adaptertest: injected failure of the %s copy for %s", op, source)
		}
	}
	return nil
}

func (h *harness) NewSource(t testing.TB, source, name string) consumer.Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, err := New(ctx, Config{
		QueueName:       source,
		CreateQueues:    true,
		Consumer:        name,
		Endpoint:        h.endpoint,
		WaitTimeSeconds: 1,
		Receivers:       1,
		Logger:          quietLogger(),
		Client:          hookedClient(h.endpoint, h.hook),
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func (h *harness) queueURL(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err == nil {
		return aws.ToString(out.QueueUrl)
	}
	in := &awssqs.CreateQueueInput{QueueName: aws.String(name)}
	if strings.HasSuffix(name, ".fifo") {
		in.Attributes = map[string]string{"FifoQueue": "true"}
	}
	created, err := h.client.CreateQueue(ctx, in)
	if err != nil {
		t.Fatalf("creating queue %s: %v", name, err)
	}
	return aws.ToString(created.QueueUrl)
}

// Publish sends msgs in order in batches of ten: ID in the message-id
// attribute, Key in message-key (and as the MessageGroupId on a FIFO queue),
// headers as String attributes.
func (h *harness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	publish(t, h.client, h.queueURL(t, source), msgs...)
}

func publish(t testing.TB, client *awssqs.Client, url string, msgs ...*consumer.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fifo := strings.HasSuffix(url, ".fifo")
	for chunk := range chunks(msgs, maxBatch) {
		entries := make([]types.SendMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			attrs := make(map[string]types.MessageAttributeValue, len(m.Headers)+2)
			str := func(k, v string) {
				attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
			}
			for k, v := range m.Headers {
				str(k, v)
			}
			if m.ID != "" {
				str(IDAttributeDefault, m.ID)
			}
			if m.Key != "" {
				str(KeyAttributeDefault, m.Key)
			}
			entries[i] = types.SendMessageBatchRequestEntry{
				Id:                aws.String(fmt.Sprint(i)),
				MessageBody:       aws.String(string(m.Body)),
				MessageAttributes: attrs,
			}
			if fifo {
				entries[i].MessageGroupId = aws.String(m.Key)
				entries[i].MessageDeduplicationId = aws.String(fmt.Sprintf("%s-%d", m.ID, rand.Uint64()))
			}
		}
		out, err := client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			t.Fatalf("SendMessageBatch: %v", err)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("SendMessageBatch: %d entries failed, first: %s %s", len(out.Failed), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
		}
	}
}

// DeadLetters reads the dead-letter queue without deleting anything: it
// receives until no new message comes, then makes them visible again.
func (h *harness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	dlq := dlqName(source, name)
	return readQueue(t, h.client, h.queueURL(t, dlq), n, timeout)
}

// readQueue returns the messages of a queue, waiting up to timeout until
// there are at least n, and leaves them in the queue.
func readQueue(t testing.TB, client *awssqs.Client, url string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(timeout)
	seen := make(map[string]*consumer.Message)
	var receipts []string
	for {
		out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl:              aws.String(url),
			MaxNumberOfMessages:   maxBatch,
			VisibilityTimeout:     30,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatalf("reading %s: %v", url, err)
		}
		for _, m := range out.Messages {
			receipts = append(receipts, aws.ToString(m.ReceiptHandle))
			h := Headers(m.MessageAttributes)
			seen[aws.ToString(m.MessageId)] = &consumer.Message{
				ID: h[IDAttributeDefault], Key: h[KeyAttributeDefault], Body: []byte(aws.ToString(m.Body)),
				Headers: h, Source: queueNameFromURL(url), Partition: -1, Offset: -1,
			}
		}
		if len(out.Messages) > 0 {
			continue
		}
		if len(seen) >= n || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range receipts {
		_, _ = client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(r), VisibilityTimeout: 0})
	}
	out := make([]*consumer.Message, 0, len(seen))
	for _, m := range seen {
		out = append(out, m)
	}
	return out
}

func TestConformance(t *testing.T) {
	endpoint, client := emulator(t)
	adaptertest.Run(t, &harness{endpoint: endpoint, client: client})
}

// dlqName is DeadLetterQueueName for names known to fit SQS's limit.
func dlqName(queue, consumer string) string {
	n, err := DeadLetterQueueName(queue, consumer)
	if err != nil {
		panic(err)
	}
	return n
}
