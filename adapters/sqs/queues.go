package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// resolve finds the queues and checks their attributes.
func (s *Source) resolve(ctx context.Context) error {
	cfg := s.cfg
	var err error
	if s.queueURL = cfg.QueueURL; s.queueURL == "" {
		if s.queueURL, err = s.queueURLFor(ctx, cfg.QueueName, cfg.CreateQueues); err != nil {
			return err
		}
	}
	s.queue = queueNameFromURL(s.queueURL)
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(s.queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return fmt.Errorf("oncely/sqs: reading attributes of queue %s: %w", s.queue, err)
	}
	attrs := out.Attributes
	s.fifo = attrs[string(types.QueueAttributeNameFifoQueue)] == "true"

	var errs []error
	if s.maxSize = cfg.MaxMessageSize; s.maxSize == 0 {
		s.maxSize = MaxMessageSizeDefault
		if n, err := strconv.Atoi(attrs[string(types.QueueAttributeNameMaximumMessageSize)]); err == nil && n >= minMessageSize {
			s.maxSize = n
		}
	}
	s.visibility = cfg.VisibilityTimeout
	if s.visibility == 0 {
		secs, err := strconv.Atoi(attrs[string(types.QueueAttributeNameVisibilityTimeout)])
		if err != nil || secs < 1 {
			errs = append(errs, fmt.Errorf("queue %s has VisibilityTimeout %q; set Config.VisibilityTimeout (at least 1s) so renewals have a period", s.queue, attrs[string(types.QueueAttributeNameVisibilityTimeout)]))
		}
		s.visibility = time.Duration(secs) * time.Second
	}
	if s.visibility > cfg.MaxExtension {
		errs = append(errs, fmt.Errorf("VisibilityTimeout %s exceeds MaxExtension %s", s.visibility, cfg.MaxExtension))
	}
	if rp := attrs[string(types.QueueAttributeNameRedrivePolicy)]; rp != "" {
		if err := checkRedrive(rp, cfg.MaxAttempts); err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %w", s.queue, err))
		}
	}

	s.dlq = cfg.DeadLetterQueueName
	if s.dlq == "" {
		if s.dlq, err = DeadLetterQueueName(s.queue, cfg.Consumer); err != nil {
			errs = append(errs, err)
		}
	}
	if s.dlq != "" && isFIFOName(s.dlq) != s.fifo {
		errs = append(errs, fmt.Errorf("dead-letter queue %s must be a FIFO queue exactly when the source %s is (FIFO: %t)", s.dlq, s.queue, s.fifo))
	}
	if len(errs) > 0 {
		return fmt.Errorf("oncely/sqs: %w", errors.Join(errs...))
	}
	if s.dlqURL, err = s.queueURLFor(ctx, s.dlq, cfg.CreateQueues); err != nil {
		return err
	}
	return nil
}

// checkRedrive checks that SQS's own redrive (after maxReceiveCount receives)
// cannot pre-empt the consumer's dead-lettering after maxAttempts attempts.
func checkRedrive(policy string, maxAttempts int) error {
	var rp struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(policy), &rp); err != nil {
		return fmt.Errorf("unreadable RedrivePolicy %q: %w", policy, err)
	}
	raw := string(rp.MaxReceiveCount)
	if uq, err := strconv.Unquote(raw); err == nil {
		raw = uq
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return fmt.Errorf("RedrivePolicy %q has no numeric maxReceiveCount", policy)
	}
	if maxAttempts >= n {
		return fmt.Errorf("its RedrivePolicy moves a message to %s after %d receives, but the consumer makes up to %d attempts (MaxAttempts): "+
			"SQS would move a failing message before the consumer dead-letters it, without failure context, and a consumer restart or lost lease also counts as a receive; "+
			"set MaxAttempts below %d or raise maxReceiveCount above %d", rp.DeadLetterTargetArn, n, maxAttempts, n, maxAttempts)
	}
	return nil
}

func isFIFOName(name string) bool { return len(name) > 5 && name[len(name)-5:] == ".fifo" }

// queueURLFor looks name up, creating it when create is set and it is absent.
func (s *Source) queueURLFor(ctx context.Context, name string, create bool) (string, error) {
	out, err := s.client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) || !create {
		return "", fmt.Errorf("oncely/sqs: looking up queue %s: %w", name, err)
	}
	in := &awssqs.CreateQueueInput{QueueName: aws.String(name)}
	if isFIFOName(name) {
		in.Attributes = map[string]string{string(types.QueueAttributeNameFifoQueue): "true"}
	}
	created, err := s.client.CreateQueue(ctx, in)
	if err != nil {
		return "", fmt.Errorf("oncely/sqs: creating queue %s: %w", name, err)
	}
	return aws.ToString(created.QueueUrl), nil
}
