package sqs

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchtest"
)

const (
	benchMessages  = 20_000
	benchReceivers = 4
)

// BenchmarkThroughput compares, in one run against the emulator, the
// baseline with the oncely SQS consumer (the same number of receivers,
// no-op handler), each draining benchMessages messages pre-filled with
// SendMessageBatch. The two alternate ONCELY_BENCH_ROUNDS times (default 2)
// so that load from other processes on the machine hits both alike; each
// round's time runs from the start to the last delete (baseline) or the last
// ack (oncely).
//
// The baseline is the loop the AWS SDK for Go v2's SQS examples teach:
// ReceiveMessage with up to 10 messages and a wait, handle them, delete them
// with one DeleteMessageBatch, repeat (the GetMessages and DeleteMessages
// actions of
// https://docs.aws.amazon.com/code-library/latest/ug/go_2_sqs_code_examples.html,
// source in https://github.com/awsdocs/aws-doc-sdk-examples/tree/main/gov2/sqs),
// here with a no-op handling, run by benchReceivers goroutines as the oncely
// side runs benchReceivers receivers, wait 1 s on both sides.
//
// Stopping is timed apart, after the drain: the baseline waits for its
// receive calls in flight (it makes no new one once it has deleted every
// message, as it knows their number), oncely's Stop for the long polls it
// made after the last message (it cannot know there are no more) and then
// releases what they took; both take up to the wait, 1 s here. stop_ms is
// oncely's mean Stop, baseline_stop_ms the loop's; x_baseline_with_stop is
// the ratio of the totals with both included. Logged last: oncely's rate as
// a multiple of the baseline's (x_baseline, the median of the rounds'
// ratios). Run it with
//
//	go test -run '^$' -bench Throughput -benchtime 1x ./adapters/sqs/
func BenchmarkThroughput(b *testing.B) {
	endpoint, client := emulator(b)
	rounds := benchtest.EnvInt("ONCELY_BENCH_ROUNDS", 2)
	for b.Loop() {
		res := benchtest.Rounds{Messages: benchMessages}
		var hand, oncely, handStop, oncelyStop time.Duration
		for range rounds {
			h, hs := benchRun(b, client, "hand", func(ctx context.Context, url string) (time.Time, time.Time) { return handWritten(ctx, b, client, url) })
			o, oss := benchRun(b, client, "oncely", func(ctx context.Context, url string) (time.Time, time.Time) {
				return oncelyConsumer(ctx, b, endpoint, url)
			})
			res.Add(b, h, o)
			fmt.Fprintf(os.Stderr, "%s: stop: baseline %s, oncely %s\n", b.Name(), hs.Round(time.Millisecond), oss.Round(time.Millisecond))
			hand, oncely, handStop, oncelyStop = hand+h, oncely+o, handStop+hs, oncelyStop+oss
		}
		b.ReportMetric(float64(oncelyStop.Milliseconds())/float64(rounds), "stop_ms")
		b.ReportMetric(float64(handStop.Milliseconds())/float64(rounds), "baseline_stop_ms")
		b.ReportMetric(float64(hand+handStop)/float64(oncely+oncelyStop), "x_baseline_with_stop")
		res.Report(b, fmt.Sprintf("aws-sdk-go-v2 ReceiveMessage + DeleteMessageBatch loop, %d goroutines", benchReceivers))
	}
}

// benchRun fills a fresh queue and returns how long drain takes to empty it
// and how long it then takes to stop. drain returns when the last message
// was settled and when it had stopped.
func benchRun(b *testing.B, client *awssqs.Client, name string, drain func(ctx context.Context, url string) (drained, stopped time.Time)) (time.Duration, time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	queue := uniqueQueue("bench-" + name)
	out, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(queue)})
	if err != nil {
		b.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	prefill(ctx, b, client, url)
	start := time.Now()
	drained, stopped := drain(ctx, url)
	return drained.Sub(start), stopped.Sub(drained)
}

// prefill sends benchMessages messages with SendMessageBatch, 8 calls at a time.
func prefill(ctx context.Context, b *testing.B, client *awssqs.Client, url string) {
	b.Helper()
	var wg sync.WaitGroup
	var failed atomic.Bool
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for {
				first := int(next.Add(maxBatch)) - maxBatch
				if first >= benchMessages || failed.Load() {
					return
				}
				entries := make([]types.SendMessageBatchRequestEntry, 0, maxBatch)
				for i := first; i < min(first+maxBatch, benchMessages); i++ {
					entries = append(entries, types.SendMessageBatchRequestEntry{
						Id:          aws.String(strconv.Itoa(i - first)),
						MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i)),
						MessageAttributes: map[string]types.MessageAttributeValue{
							IDAttributeDefault: {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("bench-%06d", i))},
						},
					})
				}
				out, err := client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed", len(out.Failed))
				}
				if err != nil {
					failed.Store(true)
					b.Errorf("prefill: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		b.FailNow()
	}
}

// handWritten is the baseline (see BenchmarkThroughput): benchReceivers
// goroutines each receiving up to 10, deleting them in one batch, repeat.
func handWritten(ctx context.Context, b *testing.B, client *awssqs.Client, url string) (drained, stopped time.Time) {
	var done atomic.Int64
	var wg sync.WaitGroup
	var last atomic.Int64 // when the last delete returned, in UnixNano
	for range benchReceivers {
		wg.Go(func() {
			for done.Load() < benchMessages && ctx.Err() == nil {
				out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
					QueueUrl:                    aws.String(url),
					MaxNumberOfMessages:         maxBatch,
					WaitTimeSeconds:             1,
					MessageAttributeNames:       []string{"All"},
					MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
					AttributeNames:              []types.QueueAttributeName{types.QueueAttributeNameAll}, //lint:ignore SA1019 the emulator reads only this field
				})
				if err != nil {
					b.Errorf("receive: %v", err)
					return
				}
				if len(out.Messages) == 0 {
					continue
				}
				entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
				}
				del, err := client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				if err == nil && len(del.Failed) > 0 {
					err = fmt.Errorf("%d entries failed", len(del.Failed))
				}
				if err != nil {
					b.Errorf("delete: %v", err)
					return
				}
				if done.Add(int64(len(out.Messages))) >= benchMessages {
					last.Store(time.Now().UnixNano())
				}
			}
		})
	}
	wg.Wait()
	return time.Unix(0, last.Load()), time.Now()
}

// oncelyConsumer drains the queue with the oncely consumer and a no-op
// handler; once every message was acked (deleted) it stops the consumer.
func oncelyConsumer(ctx context.Context, b *testing.B, endpoint, url string) (drained, stopped time.Time) {
	return oncelyConsumerClient(ctx, b, endpoint, url, nil)
}

func oncelyConsumerClient(ctx context.Context, b *testing.B, endpoint, url string, client *awssqs.Client) (drained, stopped time.Time) {
	src, err := New(ctx, Config{Client: client, QueueURL: url, Consumer: "bench", CreateQueues: true, Endpoint: endpoint, WaitTimeSeconds: 1, Receivers: benchReceivers, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	var acked atomic.Int64
	all := make(chan struct{})
	c, err := consumer.New(src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }),
		consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "bench", Concurrency: 64, MaxInFlight: 256, Ordering: consumer.Unordered, Logger: quietLogger(),
			Observer: observerFunc(func(ev consumer.Event) {
				if ev.Outcome == consumer.OutcomeProcessed && acked.Add(1) == benchMessages {
					close(all)
				}
			})})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	select {
	case <-all:
	case <-ctx.Done():
		b.Errorf("only %d of %d acked", acked.Load(), benchMessages)
	}
	drained = time.Now()
	if err := c.Stop(ctx); err != nil {
		b.Error(err)
	}
	if err := <-done; err != nil {
		b.Error(err)
	}
	return drained, time.Now()
}

type observerFunc func(consumer.Event)

func (f observerFunc) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (observerFunc) BreakerChanged(bool)                            {}
