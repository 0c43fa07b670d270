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

// send sends msgs in batches of ten; on a FIFO queue dedup gives each
// message's MessageDeduplicationId, asked once per message so that a batch
// entry sent again keeps its ID.
func (s *sqsBroker) send(ctx context.Context, source string, dedup func(*consumer.Message) string, msgs ...*consumer.Message) error {
	qurl, err := s.queueURL(ctx, source, true)
	if err != nil {
		return err
	}
	fifo := strings.HasSuffix(source, ".fifo")
	for start := 0; start < len(msgs); start += 10 {
		chunk := msgs[start:min(start+10, len(msgs))]
		entries := make([]types.SendMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			if m == nil {
				return fmt.Errorf("sqs: Publish: message %d is nil", start+i)
			}
			e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(m.Body)),
				MessageAttributes: sqsAttributes(m)}
			if fifo {
				group := m.Key
				if group == "" {
					group = m.ID
				}
				e.MessageGroupId, e.MessageDeduplicationId = aws.String(group), aws.String(dedup(m))
			}
			entries[i] = e
		}
		for try := 1; len(entries) > 0; try++ {
			out, err := s.client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(qurl), Entries: entries})
			if err != nil {
				return fmt.Errorf("sqs: sending to %s: %w", source, err)
			}
			if len(out.Failed) == 0 {
				break
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
	return nil
}

// sqsAttributes puts the ID in message-id, the key in message-key and the
// other headers in attributes of their own when they fit in SQS's ten (and
// none is empty), else all of them in one JSON attribute, as adapters/sqs
// packs failure context.
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
		if v == "" || strings.HasPrefix(strings.ToLower(name), "aws.") || strings.HasPrefix(strings.ToLower(name), "amazon.") {
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
