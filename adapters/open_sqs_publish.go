package adapters

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/adapters/sqs"
	"github.com/oncely/oncely/consumer"
)

// Publish sends msgs; on a FIFO queue each message's ID is its
// MessageDeduplicationId (see publishDedupID), so a message published twice
// within SQS's five-minute deduplication window is kept once.
func (s *sqsBroker) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	return s.send(ctx, source, publishDedupID, msgs...)
}

// publishDedupID is m.ID when SQS takes it as a MessageDeduplicationId (1 to
// 128 ASCII letters, digits and punctuation), else "sha256-" and the hex
// SHA-256 of m.ID, so any valid message ID can be published.
func publishDedupID(m *consumer.Message) string {
	valid := len(m.ID) >= 1 && len(m.ID) <= 128
	for i := 0; valid && i < len(m.ID); i++ {
		valid = m.ID[i] > ' ' && m.ID[i] <= '~'
	}
	if valid {
		return m.ID
	}
	sum := sha256.Sum256([]byte(m.ID))
	return "sha256-" + hex.EncodeToString(sum[:])
}

// redriveDedupID is the MessageDeduplicationId of a redriven copy on a FIFO
// queue: unique to that redrive. SQS remembers deduplication IDs for five
// minutes, even after the message was deleted, so a copy deduplicated by its
// message ID would be accepted and silently dropped when the message was
// published, or redriven, less than five minutes earlier; the dead letter
// would then be removed and the message lost. The message ID attribute, and
// so the idempotency claim, stays the same.
func redriveDedupID(*consumer.Message) string { return "redrive-" + rand.Text() }

// send sends msgs in batches of at most ten entries and
// sqs.MaxMessageSizeDefault bytes (SQS's limits on a batch); on a FIFO queue
// dedup gives each message's MessageDeduplicationId, asked once per message
// so that a batch entry sent again keeps its ID.
//
// Every entry is checked first (sqsRefusal): a message SQS would refuse
// alone fails the call with ErrMessageRefused before anything is sent. An
// entry SQS fails anyway (a transient failure of one entry) is sent again
// with the batch's other failed entries, up to five times; the entries after
// it in the batch were sent already, so such a failure can put a key's later
// message on the queue before it (see docs/outbox.md).
func (s *sqsBroker) send(ctx context.Context, source string, dedup func(*consumer.Message) string, msgs ...*consumer.Message) error {
	qurl, err := s.queueURL(ctx, source, true)
	if err != nil {
		return err
	}
	maxSize, err := s.maxMessageSize(ctx, qurl)
	if err != nil {
		return err
	}
	fifo := strings.HasSuffix(source, ".fifo")
	entries := make([]types.SendMessageBatchRequestEntry, len(msgs))
	sizes := make([]int, len(msgs))
	for i, m := range msgs {
		if m == nil {
			return fmt.Errorf("sqs: Publish: message %d is nil", i)
		}
		e := types.SendMessageBatchRequestEntry{MessageBody: aws.String(string(m.Body)), MessageAttributes: sqsAttributes(m)}
		if fifo {
			group := m.Key
			if group == "" {
				group = m.ID
			}
			e.MessageGroupId, e.MessageDeduplicationId = aws.String(group), aws.String(dedup(m))
		}
		if err := sqsRefusal(e, maxSize); err != nil {
			return fmt.Errorf("sqs: sending to %s: message %d of %d (ID %q): %w: %w; nothing was sent", source, i+1, len(msgs), m.ID, ErrMessageRefused, err)
		}
		entries[i], sizes[i] = e, sqs.MessageSize(aws.ToString(e.MessageBody), e.MessageAttributes)
	}
	for start := 0; start < len(entries); {
		end, total := start, 0
		for end < len(entries) && end-start < 10 && total+sizes[end] <= sqs.MaxMessageSizeDefault {
			total += sizes[end]
			end++
		}
		if err := s.sendBatch(ctx, source, qurl, entries[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// sendBatch sends entries (one batch) to qurl, sending the entries SQS
// failed again, up to five times in all.
func (s *sqsBroker) sendBatch(ctx context.Context, source, qurl string, entries []types.SendMessageBatchRequestEntry) error {
	entries = slices.Clone(entries)
	for i := range entries {
		entries[i].Id = aws.String(strconv.Itoa(i))
	}
	for try := 1; ; try++ {
		out, err := s.client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(qurl), Entries: entries})
		if err != nil {
			return fmt.Errorf("sqs: sending to %s: %w", source, err)
		}
		if len(out.Failed) == 0 {
			return nil
		}
		if try == 5 {
			f := out.Failed[0]
			return fmt.Errorf("sqs: sending to %s: %d messages refused, e.g. %s: %s", source, len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		failed := map[string]bool{}
		for _, f := range out.Failed {
			failed[aws.ToString(f.Id)] = true
		}
		entries = slices.DeleteFunc(entries, func(e types.SendMessageBatchRequestEntry) bool { return !failed[aws.ToString(e.Id)] })
		if err := sleepUntil(ctx, time.Now().Add(time.Duration(try)*100*time.Millisecond)); err != nil {
			return err
		}
	}
}

// sqsAttributes puts the ID in message-id, the key in message-key and the
// other headers in attributes of their own when they fit in SQS's ten (and
// SQS takes every one: a valid name, a value not empty and of characters
// SQS takes), else all of them in one JSON attribute, as adapters/sqs packs
// failure context.
func sqsAttributes(m *consumer.Message) map[string]types.MessageAttributeValue {
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	out := map[string]types.MessageAttributeValue{}
	if m.ID != "" {
		out[sqs.IDAttributeDefault] = str(m.ID)
	}
	if m.Key != "" {
		out[sqs.KeyAttributeDefault] = str(m.Key)
	}
	rest := maps.Clone(m.Headers)
	delete(rest, sqs.IDAttributeDefault)
	delete(rest, sqs.KeyAttributeDefault)
	fits := len(out)+len(rest) <= 10
	for name, v := range rest {
		if v == "" || !sqsAttributeName(name) || !sqsText(v) {
			fits = false
		}
	}
	if fits {
		for name, v := range rest {
			out[name] = str(v)
		}
	} else if len(rest) > 0 {
		b, _ := json.Marshal(rest)
		out[sqs.FailureAttribute] = str(string(b))
	}
	return out
}
