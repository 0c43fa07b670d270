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

// sqsSession receives from a dead-letter queue and keeps what it got
// invisible until close makes the rest visible again.
type sqsSession struct {
	s      *sqsBroker
	url    string // "" when the queue does not exist
	name   string
	count  int
	got    int
	empty  int
	mu     sync.Mutex
	held   map[string]string // SQS message ID → receipt handle, not removed
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
	name := s.deadLetterQueue(source, consumerName)
	durl, err := s.queueURL(ctx, name, false)
	if err != nil {
		return nil, err
	}
	sess := &sqsSession{s: s, url: durl, name: name, held: map[string]string{}, source: source}
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

func (ss *sqsSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	var out []heldLetter
	// SQS's depth is approximate: read until three receives come back
	// empty, bounded well above the depth so that a consumer
	// dead-lettering meanwhile cannot keep a redrive going.
	for ss.url != "" && len(out) < n && ss.got < 2*ss.count+10 && ss.empty < 3 {
		resp, err := ss.s.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(ss.url), MaxNumberOfMessages: int32(min(10, n-len(out))), VisibilityTimeout: sqsHold, WaitTimeSeconds: 1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return out, fmt.Errorf("sqs: reading %s: %w", ss.name, err)
		}
		if len(resp.Messages) == 0 {
			ss.empty++
			continue
		}
		for _, m := range resp.Messages {
			ss.got++
			id, receipt := aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle)
			ss.mu.Lock()
			ss.held[id] = receipt
			ss.mu.Unlock()
			out = append(out, heldLetter{msg: sqsMessage(m, ss.source), remove: func(ctx context.Context) error {
				if _, err := ss.s.client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(ss.url), ReceiptHandle: aws.String(receipt)}); err != nil {
					return err
				}
				ss.mu.Lock()
				delete(ss.held, id)
				ss.mu.Unlock()
				return nil
			}})
		}
	}
	return out, nil
}

// close makes the messages not removed visible again.
func (ss *sqsSession) close(ctx context.Context) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for id, receipt := range ss.held {
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String(receipt), VisibilityTimeout: 0})
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
