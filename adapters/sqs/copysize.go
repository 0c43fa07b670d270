package sqs

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/oncely/oncely/consumer"
)

// removedBody is the body of a dead-letter copy whose body was removed to fit
// (SQS refuses an empty body); the consumer.HeaderBodyRemovedSize and
// consumer.HeaderBodyRemovedSHA256 attributes describe the original.
const removedBody = "(body removed to fit: see oncely-body-removed-size and oncely-body-removed-sha256)"

// messageSize is a message's size as SQS counts it against
// MaximumMessageSize: the body's bytes plus each attribute's name, data type
// and value.
func MessageSize(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for name, v := range attrs {
		n += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// refused reports whether SQS refused a send for good: the message is invalid
// as sent (too large above all), so sending it again unchanged cannot succeed.
func refused(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "InvalidParameterValue", "InvalidParameterValueException", "InvalidMessageContents", "InvalidMessageContentsException":
		return true
	}
	return false
}

// sendDeadLetter sends the dead-letter copy of d carrying headers, made to fit
// SQS's size limit with consumer.FitCopy: when it is larger than the limit
// the stack is dropped, the error cut, and last the body replaced by marker
// attributes. When SQS refuses the copy as invalid anyway (a lower limit than
// configured), it is trimmed one step further and sent again, at most once
// per trimming step. It reports whether the copy sent was trimmed; a copy SQS
// refuses even with its body removed is an error wrapping
// consumer.ErrCopyRefused.
func (d *delivery) sendDeadLetter(ctx context.Context, headers map[string]string) (trimmed bool, err error) {
	s := d.s
	size := func(body []byte, h map[string]string) int {
		return MessageSize(copyBody(body), packAttributes(d.attrs, h, s.cfg.IDAttribute))
	}
	body, limit := []byte(d.body), s.maxSize
	for {
		f, err := consumer.FitCopy(body, headers, limit, size, true, s.cfg.IDAttribute, s.cfg.KeyAttribute)
		if err != nil {
			return false, fmt.Errorf("oncely/sqs: dead-letter copy of message %s: %w", d.msg.ID, err)
		}
		if f.Trimmed {
			s.log.Warn("dead-letter copy trimmed to fit SQS's size limit", "message_id", d.msg.ID, "limit", limit, "size", size(f.Body, f.Headers), "body_removed", f.BodyRemoved, "headers_removed", f.HeadersRemoved)
		}
		in := &awssqs.SendMessageInput{
			QueueUrl:          aws.String(s.dlqURL),
			MessageBody:       aws.String(copyBody(f.Body)),
			MessageAttributes: packAttributes(d.attrs, f.Headers, s.cfg.IDAttribute),
		}
		if s.fifo {
			// The group keeps the DLQ in the source's per-group order. The
			// deduplication ID is the SQS message ID, the same on every
			// receive of this message: a copy sent again within SQS's
			// five-minute window (the delete of the original failed, or
			// the consumer crashed before it) is dropped by SQS, while a
			// redriven and failed-again copy (a new SQS message) is kept.
			in.MessageGroupId = aws.String(firstNonEmpty(d.group, d.msg.ID, d.sqsID))
			in.MessageDeduplicationId = aws.String(d.sqsID)
		}
		_, err = s.client.SendMessage(ctx, in)
		switch {
		case err == nil:
			return f.Trimmed, nil
		case !refused(err):
			return false, fmt.Errorf("oncely/sqs: sending message %s to dead-letter queue %s: %w", d.msg.ID, s.dlq, err)
		}
		s.log.Warn("SQS refused the dead-letter copy; trimming it further", "message_id", d.msg.ID, "size", size(f.Body, f.Headers), "error", err)
		limit = size(f.Body, f.Headers) - 1
	}
}

// copyBody is the body SQS gets for a copy's body: removedBody for none.
func copyBody(b []byte) string {
	if len(b) == 0 {
		return removedBody
	}
	return string(b)
}
