package sqs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/consumer"
)

// Coordinates keys set on every message.
const (
	CoordinateMessageID     = "sqs-message-id"
	CoordinateReceiptHandle = "sqs-receipt-handle"
	CoordinateGroupID       = "sqs-message-group-id"
	CoordinateSequence      = "sqs-sequence-number"
)

// errLeaseLost is the error of a Retry on a delivery whose lease was given
// up: the message is redelivered instead.
var errLeaseLost = errors.New("visibility lease given up after a failed extension")

// delivery is one received SQS message. It is settled at most once; until
// then its visibility is renewed.
type delivery struct {
	s        *Source
	msg      *consumer.Message
	body     string
	receipt  string
	sqsID    string
	group    string
	attrs    map[string]types.MessageAttributeValue
	received time.Time // when the receive response arrived; SQS starts the visibility window just before it returns the message

	call sync.Mutex // held while a visibility change is in flight, so a retry's delay is not overwritten by a renewal

	mu       sync.Mutex
	settled  bool
	dlqSent  bool
	trimmed  bool // the dead-letter copy was trimmed to fit
	handled  bool // a settlement was tried: a handler ran
	stopped  bool // renewals stopped
	timer    *time.Timer
	deadline time.Time // the earliest the current visibility window may end
	lost     chan struct{}
	lostOnce sync.Once
}

func (s *Source) newDelivery(m types.Message, at time.Time) *delivery {
	attrs := m.MessageAttributes
	sqsID := aws.ToString(m.MessageId)
	headers := Headers(attrs)
	// A copy Close put back carries the attempt number of its first
	// receive; SQS's receive count starts again with the copy.
	first := max(consumer.AttemptFromHeaders(headers), 1)
	// Every message arrives on the source queue, producers' and the copies
	// Close puts back alike, and SQS offers nothing a producer cannot set
	// to tell them apart (SenderId would, given the consumer's own
	// principal; not done). So the failure context ("oncely-" headers) is
	// never taken from a received message: FailureHeaders writes it from
	// the real coordinates. Only the attempt number is kept, which Close's
	// copies need; a producer can set it, and so shorten the message's
	// retries (never lose it: it is dead-lettered as exhausted).
	attemptHeader, hasAttempt := headers[consumer.HeaderAttempt]
	consumer.DistrustHeaders(headers)
	if hasAttempt {
		delete(headers, consumer.UntrustedHeaderPrefix+consumer.HeaderAttempt)
		headers[consumer.HeaderAttempt] = attemptHeader
	}
	mem := s.retryHeaders(sqsID)
	maps.Copy(headers, mem)
	var id string
	if v, ok := attrs[s.cfg.IDAttribute]; ok {
		id = aws.ToString(v.StringValue)
	}
	group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	key := group
	if key == "" {
		key = headers[s.cfg.KeyAttribute]
	}
	if key == "" {
		key = id
	}
	if key == "" {
		key = sqsID
	}
	received, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	attempt := max(first+max(received, 1)-1, consumer.AttemptFromHeaders(mem))
	var ts time.Time
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		ts = time.UnixMilli(ms)
	}
	coords := map[string]string{CoordinateMessageID: sqsID, CoordinateReceiptHandle: aws.ToString(m.ReceiptHandle)}
	if group != "" {
		coords[CoordinateGroupID] = group
	}
	if seq := m.Attributes[string(types.MessageSystemAttributeNameSequenceNumber)]; seq != "" {
		coords[CoordinateSequence] = seq
	}
	body := aws.ToString(m.Body)
	return &delivery{
		s: s,
		msg: &consumer.Message{
			ID:          id,
			Key:         key,
			Body:        []byte(body),
			Headers:     headers,
			Source:      s.queue,
			Attempt:     attempt,
			Partition:   -1,
			Offset:      -1,
			Timestamp:   ts,
			Coordinates: coords,
		},
		body:     body,
		receipt:  aws.ToString(m.ReceiptHandle),
		sqsID:    sqsID,
		group:    group,
		attrs:    attrs,
		received: at,
		deadline: at.Add(s.visibility),
		lost:     make(chan struct{}),
	}
}

// Message returns the message.
func (d *delivery) Message() *consumer.Message { return d.msg }

// Lost is closed when a visibility extension failed or MaxExtension was
// reached and the visibility window ended: the message may now be delivered
// to another consumer, so the runtime cancels the handler and does not settle.
func (d *delivery) Lost() <-chan struct{} { return d.lost }

// Ack deletes the message. Concurrent acks share DeleteMessageBatch calls;
// Ack returns once its own entry was deleted.
func (d *delivery) Ack(ctx context.Context) error {
	if err := d.begin(); err != nil {
		return err
	}
	if err := d.s.acks.delete(ctx, d.receipt); err != nil {
		return err
	}
	d.finish(false)
	return nil
}

// Retry makes the message visible again after the delay, rounded up to whole
// seconds (never early), with ChangeMessageVisibility; the next attempt's
// number is SQS's receive count. SQS refuses a visibility that ends more than
// 12 hours after the receive, so a longer delay is capped to what is left of
// those 12 hours (less visibilityMargin) and logged: Retry never sends a
// visibility SQS refuses. Capabilities.MaxDelay (12h − MaxExtension) is
// always left, so the runtime's own cap makes this rare. SQS cannot change a message's attributes,
// so headers (the failure context) are kept in this Source's memory and given
// to the message when this Source receives it again; another process
// receiving it sees the original attributes only.
func (d *delivery) Retry(ctx context.Context, after time.Duration, headers map[string]string) error {
	if err := d.begin(); err != nil {
		return err
	}
	vis := visibilitySeconds(after)
	if left := int32((MaxVisibility - time.Since(d.received) - visibilityMargin) / time.Second); vis > left {
		vis = max(left, 0)
		d.s.log.Warn("retry delay capped to what is left of SQS's 12h visibility limit for this receive", "message_id", d.msg.ID, "delay", after.String(), "capped_to", (time.Duration(vis) * time.Second).String())
	}
	d.pauseRenewal()
	d.call.Lock()
	if d.isLost() {
		// A failed extension gave the lease up (and may have released
		// the message): the message is redelivered, not retried.
		d.call.Unlock()
		return fmt.Errorf("oncely/sqs: delaying message %s for retry: %w", d.msg.ID, errLeaseLost)
	}
	_, err := d.s.client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(d.s.queueURL),
		ReceiptHandle:     aws.String(d.receipt),
		VisibilityTimeout: vis,
	})
	d.call.Unlock()
	if err != nil {
		d.resumeRenewal()
		return fmt.Errorf("oncely/sqs: delaying message %s for retry: %w", d.msg.ID, err)
	}
	d.s.rememberRetry(d.sqsID, headers, after)
	d.finish(true)
	return nil
}

// DeadLetter sends a copy to the dead-letter queue (body and attributes
// unchanged, the failure context packed into FailureAttribute, trimmed to fit
// SQS's size limit, see sendDeadLetter), waits for SQS to confirm it, then
// deletes the original. When the send fails nothing is deleted; when only the
// delete fails, a second call does not send again. A copy SQS refuses for
// good is an error wrapping consumer.ErrCopyRefused.
func (d *delivery) DeadLetter(ctx context.Context, headers map[string]string) error {
	if err := d.begin(); err != nil {
		return err
	}
	d.mu.Lock()
	sent := d.dlqSent
	d.mu.Unlock()
	if !sent {
		trimmed, err := d.sendDeadLetter(ctx, headers)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.dlqSent, d.trimmed = true, trimmed
		d.mu.Unlock()
	}
	if _, err := d.s.client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(d.s.queueURL), ReceiptHandle: aws.String(d.receipt)}); err != nil {
		return fmt.Errorf("oncely/sqs: deleting dead-lettered message %s: %w", d.msg.ID, err)
	}
	d.finish(false)
	return nil
}

// CopyTrimmed reports whether the dead-letter copy sent for d was trimmed to
// fit SQS's size limit (see Config.MaxMessageSize). Retry sends no copy.
func (d *delivery) CopyTrimmed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.trimmed
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func (d *delivery) begin() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return consumer.ErrAlreadySettled
	}
	d.handled = true
	return nil
}

// nextAttempt is the attempt number of d's next delivery when it is
// released unsettled: its own when no handler ran (no settlement was tried),
// the next one otherwise.
func (d *delivery) nextAttempt() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.handled {
		return d.msg.Attempt + 1
	}
	return d.msg.Attempt
}

// finish marks d settled and stops its renewals.
func (d *delivery) finish(retried bool) {
	d.mu.Lock()
	d.settled = true
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
	d.s.settled(d, retried)
}

func (d *delivery) isLost() bool {
	select {
	case <-d.lost:
		return true
	default:
		return false
	}
}

func (d *delivery) markLost() {
	d.lostOnce.Do(func() { close(d.lost) })
}

// startRenewal schedules the first extension (see renewAfter).
func (d *delivery) startRenewal() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.schedule(time.Until(d.received.Add(renewAfter(d.s.visibility))))
}

// schedule runs renew after wait; d.mu is held.
func (d *delivery) schedule(wait time.Duration) {
	if d.stopped {
		return
	}
	d.timer = time.AfterFunc(max(wait, 0), d.renew)
}

func (d *delivery) stopRenewal() {
	d.mu.Lock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
}

func (d *delivery) pauseRenewal() { d.stopRenewal() }

// resumeRenewal restarts renewals after a failed retry: the next extension
// is due at once.
func (d *delivery) resumeRenewal() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return
	}
	d.stopped = false
	d.schedule(0)
}

// renew extends the visibility by the visibility timeout, or less to stay
// within MaxExtension; at the cap it gives the lease up when the current
// window ends.
func (d *delivery) renew() {
	s := d.s
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	ext := min(s.visibility, (s.cfg.MaxExtension - time.Since(d.received)).Truncate(time.Second))
	if ext < time.Second {
		wait := time.Until(d.deadline)
		d.timer = time.AfterFunc(max(wait, 0), func() {
			d.mu.Lock()
			stopped := d.stopped
			d.mu.Unlock()
			if !stopped {
				s.log.Warn("lease given up: MaxExtension reached while the handler runs", "message_id", d.msg.ID, "max_extension", s.cfg.MaxExtension.String())
				d.markLost()
			}
		})
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()

	d.call.Lock() // unlocked by renewed
	s.renewals.submit(renewal{d: d, ext: ext})
}

// renewed takes the result of an extension to ext sent at sent: on success
// the next one is scheduled. A call SQS did not answer (unanswered: SQS
// down or unreachable) is tried again while the window leaves time for it;
// otherwise, on failure, the lease is given up, and the message released at
// once when its window is still open. So an outage shorter than what is
// left of the window keeps the lease (a held retry is then applied once SQS
// answers), and SQS refusing the extension ends it at once.
func (d *delivery) renewed(sent time.Time, ext time.Duration, err error, unanswered bool) {
	d.call.Unlock()
	s := d.s
	d.mu.Lock()
	if d.stopped || s.ctx.Err() != nil {
		d.mu.Unlock()
		return
	}
	if err == nil && time.Now().After(d.deadline) {
		// The window may have ended before SQS applied the extension, and
		// another consumer may have received the message meanwhile.
		err, unanswered = fmt.Errorf("extension confirmed %s after the visibility window ended", time.Since(d.deadline).Round(time.Millisecond)), false
	}
	if err == nil {
		d.deadline = sent.Add(ext)
		d.schedule(renewAfter(ext))
		d.mu.Unlock()
		return
	}
	left := time.Until(d.deadline) - renewMargin
	if unanswered && left > renewRetryMin {
		wait := min(renewRetryMax, left/2)
		d.schedule(wait)
		d.mu.Unlock()
		s.log.Warn("visibility extension failed; trying again while the visibility window is open", "message_id", d.msg.ID, "error", err, "in", wait.String())
		return
	}
	d.stopped = true
	open := time.Until(d.deadline) > renewMargin
	d.mu.Unlock()
	s.log.Warn("visibility extension failed; cancelling the handler and releasing the message to be redelivered", "message_id", d.msg.ID, "error", err)
	d.markLost()
	if open {
		d.releaseLost()
	}
}

// releaseLost makes d visible at once after its lease was given up while its
// visibility window was still open (with its receipt handle still the
// latest), so the next consumer need not wait for the window to end. It is
// best effort: the window ends anyway. It holds d.call, as Retry does, and
// releases nothing once d is settled: a release landing after a retry's
// visibility change would cut the retry's delay short, and one landing after
// the message was received again would make that delivery visible too.
func (d *delivery) releaseLost() {
	d.call.Lock()
	defer d.call.Unlock()
	d.mu.Lock()
	settled := d.settled
	d.mu.Unlock()
	if settled {
		return
	}
	ctx, cancel := context.WithTimeout(d.s.ctx, renewMargin)
	defer cancel()
	if err := d.s.makeVisible(ctx, []*delivery{d}); err != nil {
		d.s.log.Warn("releasing a message whose lease was given up; it comes back when its visibility window ends", "message_id", d.msg.ID, "error", err)
	}
}
