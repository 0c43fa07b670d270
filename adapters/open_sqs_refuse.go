package adapters

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/adapters/sqs"
)

// ErrMessageRefused is wrapped by Broker.Publish on SQS when a message cannot
// be sent as it is, whatever is retried: an empty body, a body or an ID, key
// or header value with characters SQS does not take, a message larger than
// the queue's MaximumMessageSize, a FIFO message group ID SQS does not take.
// It is returned before any message of the call is sent, so a refused
// message never lets a later one of its key through.
var ErrMessageRefused = errors.New("the broker refuses this message")

// sqsRefusal returns why SQS would refuse the entry e alone on a queue whose
// messages may be maxSize bytes, or nil.
func sqsRefusal(e types.SendMessageBatchRequestEntry, maxSize int) error {
	body := aws.ToString(e.MessageBody)
	switch {
	case body == "":
		return errors.New("empty body")
	case !sqsText(body):
		return errors.New("the body holds characters SQS does not take (it takes valid UTF-8 of tab, newline, carriage return and U+0020 upwards, without U+FFFE and U+FFFF)")
	}
	for name, v := range e.MessageAttributes {
		if !sqsText(aws.ToString(v.StringValue)) {
			return fmt.Errorf("attribute %s holds characters SQS does not take", name)
		}
	}
	if n := sqs.MessageSize(body, e.MessageAttributes); n > maxSize {
		return fmt.Errorf("%d bytes (body and attributes), over the queue's MaximumMessageSize of %d", n, maxSize)
	}
	if e.MessageGroupId != nil && !sqsGroupID(aws.ToString(e.MessageGroupId)) {
		return fmt.Errorf("message group ID %q (the message's key, else its ID) is not 1 to 128 ASCII letters, digits and punctuation", aws.ToString(e.MessageGroupId))
	}
	return nil
}

// sqsText reports whether SQS takes s as a message body or attribute value:
// valid UTF-8 of #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD and #x10000
// to #x10FFFF.
func sqsText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000:
		default:
			return false
		}
	}
	return true
}

// sqsGroupID reports whether SQS takes s as a MessageGroupId: 1 to 128 ASCII
// letters, digits and punctuation.
func sqsGroupID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// sqsAttributeName reports whether SQS takes name as a message attribute's
// name: up to 256 letters, digits, '_', '-' and '.', not starting with
// "AWS." or "Amazon." (any case), no period first, last or twice in a row.
func sqsAttributeName(name string) bool {
	lower := strings.ToLower(name)
	if name == "" || len(name) > 256 || strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") ||
		name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// maxMessageSize is the largest message queue qurl takes: the URL's
// max_message_size when set, else the queue's MaximumMessageSize, read once
// per queue.
func (s *sqsBroker) maxMessageSize(ctx context.Context, qurl string) (int, error) {
	if s.cfg.MaxMessageSize > 0 {
		return s.cfg.MaxMessageSize, nil
	}
	s.mu.Lock()
	n, ok := s.maxSizes[qurl]
	s.mu.Unlock()
	if ok {
		return n, nil
	}
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(qurl),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMaximumMessageSize}})
	if err != nil {
		return 0, fmt.Errorf("sqs: reading MaximumMessageSize of %s: %w", qurl, err)
	}
	n, err = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameMaximumMessageSize)])
	if err != nil || n <= 0 {
		n = sqs.MaxMessageSizeDefault
	}
	s.mu.Lock()
	s.maxSizes[qurl] = n
	s.mu.Unlock()
	return n, nil
}
