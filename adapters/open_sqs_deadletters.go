package adapters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/adapters/sqs"
	"github.com/oncely/oncely/consumer"
)

func (s *sqsBroker) DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error) {
	sess, err := s.session(ctx, source, consumerName)
	if err != nil {
		return nil, err
	}
	return listDeadLetters(ctx, sess, limit)
}

func (s *sqsBroker) Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error) {
	sess, err := s.session(ctx, source, consumerName)
	if err != nil {
		return RedriveResult{}, err
	}
	return redrive(ctx, sess, func(ctx context.Context, msgs ...*consumer.Message) error {
		return s.send(ctx, source, redriveDedupID, msgs...)
	}, opts)
}

// sqsHold is how long browsed dead letters stay invisible to others.
const sqsHold = 60

// sqsReceivers is the most receives (of up to ten letters each) a session
// has in flight at once, and sqsDeleters the most DeleteMessageBatch calls
// (of up to ten) removeAll has. In BenchmarkRedriveRate (docs/benchmarks-log.md,
// "Dead-letter redrive (issue 21)") a redrive took 17.0–18.4 s with one
// receive at a time, 25.0 s with one DeleteMessage a letter, and 10.4–11.3 s
// with both.
const (
	sqsReceivers = 5
	sqsDeleters  = 5
)

// sqsSession receives from a dead-letter queue and keeps what it got
// invisible until close makes the rest visible again. SQS has no snapshot
// of a queue: letters sent to it after the session opened (by SQS's
// SentTimestamp, against this machine's clock) are held back, not handed
// out, so a redriven message that fails again and is dead-lettered anew
// during the redrive is left for the next one, not removed as a second copy.
type sqsSession struct {
	s      *sqsBroker
	url    string // "" when the queue does not exist
	name   string
	opened time.Time
	count  int
	got    int
	empty  int
	mu     sync.Mutex
	held   map[string]bool // receipt handles not removed
	source string
}

func (s *sqsBroker) session(ctx context.Context, source, consumerName string) (*sqsSession, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	surl, err := s.queueURL(ctx, source, false)
	if err != nil {
		return nil, err
	}
	if surl == "" {
		return nil, noSource("sqs queue", source)
	}
	if err := checkConsumer(ctx, s, source, consumerName); err != nil {
		return nil, err
	}
	name, err := s.deadLetterQueue(source, consumerName)
	if err != nil {
		return nil, err
	}
	durl, err := s.queueURL(ctx, name, false)
	if err != nil {
		return nil, err
	}
	sess := &sqsSession{s: s, url: durl, name: name, opened: time.Now(), held: map[string]bool{}, source: source}
	if durl != "" {
		n, err := s.depth(ctx, durl)
		if err != nil {
			return nil, err
		}
		sess.count = int(n)
	}
	return sess, nil
}

func (ss *sqsSession) total() int { return ss.count }

// more reports whether to receive again. SQS's depth is approximate: read
// until three receives come back empty, bounded well above the depth.
func (ss *sqsSession) more() bool {
	return ss.url != "" && ss.got < 2*ss.count+10 && ss.empty < 3
}

// wait is the next receive's WaitTimeSeconds: a long poll (1 s) until the
// session got the depth it opened with, then short polls, so the three
// empty receives that end a session take milliseconds, not up to 3 s (a
// redrive of BenchmarkRedriveRate: 10.4–11.3 s, 11.3–14.0 s with long polls
// to the end). A letter the short polls miss stays in the queue, visible,
// for the next session; none is removed unseen.
func (ss *sqsSession) wait() int32 {
	if ss.got < ss.count {
		return 1
	}
	return 0
}

func (ss *sqsSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	var out []heldLetter
	for len(out) < n && ss.more() {
		k := min(sqsReceivers, (n-len(out)+9)/10) // each asks for up to ten of the n
		if ss.got >= ss.count {
			k = 1
		}
		wait, want := ss.wait(), n-len(out)
		resps := make([]*awssqs.ReceiveMessageOutput, k)
		errs := make([]error, k)
		var wg sync.WaitGroup
		for i := range k {
			wg.Go(func() {
				resps[i], errs[i] = ss.s.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
					QueueUrl: aws.String(ss.url), MaxNumberOfMessages: int32(min(10, want-10*i)), VisibilityTimeout: sqsHold, WaitTimeSeconds: wait,
					MessageAttributeNames:       []string{"All"},
					MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
					// local-aws-sqs 2.0.2 reads only the older field
					// (SentTimestamp, which the cutoff needs).
					AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}, //lint:ignore SA1019 the emulator reads only this field
				})
			})
		}
		wg.Wait()
		for i, resp := range resps {
			if errs[i] != nil {
				continue
			}
			if len(resp.Messages) == 0 {
				ss.empty++
			}
			for _, m := range resp.Messages {
				ss.got++
				receipt := aws.ToString(m.ReceiptHandle)
				ss.mu.Lock()
				ss.held[receipt] = true
				ss.mu.Unlock()
				msg := sqsMessage(m, ss.source)
				if msg.Timestamp.After(ss.opened) {
					continue // dead-lettered after the session opened
				}
				out = append(out, heldLetter{msg: msg, ref: receipt, remove: func(ctx context.Context) error {
					return ss.removeAll(ctx, []heldLetter{{ref: receipt}})
				}})
			}
		}
		if err := errors.Join(errs...); err != nil {
			return out, fmt.Errorf("sqs: reading %s: %w", ss.name, err)
		}
	}
	return out, nil
}

// removeAll deletes hs with DeleteMessageBatch, up to sqsDeleters calls at
// once.
func (ss *sqsSession) removeAll(ctx context.Context, hs []heldLetter) error {
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, sqsDeleters)
		mu   sync.Mutex
		errs []error
	)
	for start := 0; start < len(hs); start += 10 {
		chunk := hs[start:min(start+10, len(hs))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
			for i, h := range chunk {
				entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h.ref)}
			}
			out, err := ss.s.client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(ss.url), Entries: entries})
			failed := map[string]bool{}
			if err == nil {
				for _, f := range out.Failed {
					failed[aws.ToString(f.Id)] = true
				}
				if len(out.Failed) > 0 {
					err = fmt.Errorf("%d of %d refused, e.g. %s: %s", len(out.Failed), len(chunk), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			for i, h := range chunk {
				if err == nil || !failed[strconv.Itoa(i)] && len(failed) > 0 {
					delete(ss.held, h.ref)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqs: deleting dead letters of %s: %w", ss.name, err)
	}
	return nil
}

// close makes the messages not removed visible again.
func (ss *sqsSession) close(ctx context.Context) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for receipt := range ss.held {
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries) % 10)), ReceiptHandle: aws.String(receipt), VisibilityTimeout: 0})
	}
	var errs []error
	for start := 0; start < len(entries); start += 10 {
		out, err := ss.s.client.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(ss.url), Entries: entries[start:min(start+10, len(entries))]})
		if err != nil {
			errs = append(errs, err)
		} else if len(out.Failed) > 0 {
			errs = append(errs, fmt.Errorf("%d dead letters stay invisible for up to %ds: %s", len(out.Failed), sqsHold, aws.ToString(out.Failed[0].Message)))
		}
	}
	clear(ss.held)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqs: handing back dead letters of %s: %w", ss.name, err)
	}
	return nil
}

// sqsMessage converts a received dead letter.
func sqsMessage(m types.Message, source string) *consumer.Message {
	h := sqs.Headers(m.MessageAttributes)
	var ts time.Time
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		ts = time.UnixMilli(ms)
	}
	return &consumer.Message{ID: h[sqs.IDAttributeDefault], Key: h[sqs.KeyAttributeDefault], Body: []byte(aws.ToString(m.Body)), Headers: h,
		Source: source, Attempt: consumer.AttemptFromHeaders(h), Partition: -1, Offset: -1, Timestamp: ts}
}

// transportRef holds the HTTP transports an SDK client built.
type transportRef struct {
	mu  sync.Mutex
	trs []*http.Transport
}

func (r *transportRef) set(t *http.Transport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trs = append(r.trs, t)
}

// CloseIdleConnections closes the idle connections of every transport.
func (r *transportRef) CloseIdleConnections() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.trs {
		t.CloseIdleConnections()
	}
}
