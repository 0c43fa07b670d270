package adapters_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/consumer"
)

// The copy limits the copy-size classes run with: low enough to fill with a
// test message, and what each broker states before the publish (see
// copyLimit).
const (
	matrixCopyLimit    = 20000 // Kafka: the dead-letter topic's max.message.bytes; RabbitMQ and NATS: max_message_size
	matrixSQSCopyLimit = 4096  // SQS: the source queue's MaximumMessageSize
)

var noSizeLimit = map[string]string{
	"memory": "the memory broker has no size limit: no copy is refused",
	"redis":  "Redis takes entries up to proto-max-bulk-len (512 MB) per field: no copy is refused",
}

// copyTooLarge: a message near the broker's limit whose dead-letter copy
// (the body plus the failure context of a long error) is over it. Route: the
// copy is fitted (stack dropped, error cut, then the body replaced by its
// size and SHA-256) and reaches the DLQ with its reason, counted as trimmed.
var copyTooLarge = failureClass{
	name: "copy-too-large", id: "big", reason: consumer.ReasonPermanent, attempts: 1, trimmed: true, notOn: noSizeLimit,
	message: func(_ string, limit int) *consumer.Message {
		return &consumer.Message{ID: "big", Key: "k1", Body: []byte(strings.Repeat("b", limit-300))}
	},
	fail: func(context.Context, *matrixDB, pgx.Tx, *consumer.Message) error {
		return consumer.Permanent(errors.New(strings.Repeat("e", 10000)))
	},
	check: func(t *testing.T, broker string, dl adapters.DeadLetter, sent *consumer.Message) {
		m := dl.Message
		sum := sha256.Sum256(sent.Body)
		require.Equal(t, strconv.Itoa(len(sent.Body)), m.Header(consumer.HeaderBodyRemovedSize))
		require.Equal(t, hex.EncodeToString(sum[:]), m.Header(consumer.HeaderBodyRemovedSHA256))
		require.NotEqual(t, sent.Body, m.Body, "the body was replaced")
		if broker != "sqs" { // SQS refuses an empty body: a placeholder text stands in
			require.Empty(t, m.Body)
		}
		require.LessOrEqual(t, len(dl.Error()), 512, "the error was cut to fit")
		require.Empty(t, m.Header(consumer.HeaderHeadersRemoved), "no header of the message had to go")
	},
}

// headersTooLarge: a message whose own headers (the producer's) leave no room
// for the failure context under the broker's limit, even with its body
// removed. Route: the largest of them is removed and listed in
// oncely-headers-removed, and the copy reaches the DLQ with its ID, reason
// and body, counted as trimmed (before: refused for good and retried on the
// outage backoff forever).
var headersTooLarge = failureClass{
	name: "headers-too-large", id: "wide", reason: consumer.ReasonPermanent, attempts: 1, trimmed: true, notOn: noSizeLimit,
	message: func(_ string, limit int) *consumer.Message {
		return &consumer.Message{ID: "wide", Key: "k1", Body: []byte("headers-too-large"),
			Headers: map[string]string{"x-big": strings.Repeat("h", limit-250), "x-small": "kept"}}
	},
	fail: func(context.Context, *matrixDB, pgx.Tx, *consumer.Message) error {
		return consumer.Permanent(errors.New("undecodable"))
	},
	check: func(t *testing.T, _ string, dl adapters.DeadLetter, sent *consumer.Message) {
		m := dl.Message
		require.Equal(t, "headers-too-large", string(m.Body), "the body stays: removing it would not have made room")
		require.Empty(t, m.Header("x-big"))
		require.Equal(t, "kept", m.Header("x-small"), "only the headers needed went")
		var removed map[string]int
		require.NoError(t, json.Unmarshal([]byte(m.Header(consumer.HeaderHeadersRemoved)), &removed), "%s = %q", consumer.HeaderHeadersRemoved, m.Header(consumer.HeaderHeadersRemoved))
		require.Equal(t, map[string]int{"x-big": len(sent.Headers["x-big"])}, removed)
		require.Equal(t, sent.ID, m.Header(consumer.HeaderMessageID))
	},
}

// copyLimit lowers what broker accepts for copies of source's consumer name
// to a size a test message can fill, the way an operator states it: Kafka
// the dead-letter topic's max.message.bytes (created beforehand; the Source
// describes it at start), RabbitMQ the max_message_size URL parameter, SQS
// the source queue's MaximumMessageSize (created beforehand; the Source
// reads it). It returns the URL to open and the limit.
func copyLimit(t *testing.T, broker, raw, source, name string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	switch broker {
	case "kafka":
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(u.Host, ",")...))
		require.NoError(t, err)
		defer cl.Close()
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{"max.message.bytes": aws.String(strconv.Itoa(matrixCopyLimit))}, kafka.DeadLetterTopic(source, name))
		require.NoError(t, errors.Join(err, resp.Err))
		return raw, matrixCopyLimit
	case "rabbitmq", "nats":
		return raw + "&max_message_size=" + strconv.Itoa(matrixCopyLimit), matrixCopyLimit
	case "sqs":
		client := awssqs.New(awssqs.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(u.Query().Get("endpoint")),
			Credentials:  credentials.NewStaticCredentialsProvider("oncely", "oncely", ""),
		})
		_, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(source),
			Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(matrixSQSCopyLimit)}})
		require.NoError(t, err)
		return raw, matrixSQSCopyLimit
	}
	t.Fatalf("no copy limit for %s", broker)
	return "", 0
}
