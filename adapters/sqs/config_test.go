package sqs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

func TestConfigValidate(t *testing.T) {
	err := Config{
		QueueName:         "bad name",
		WaitTimeSeconds:   21,
		MaxMessages:       11,
		Receivers:         -1,
		VisibilityTimeout: 1500 * time.Millisecond,
		MaxExtension:      13 * time.Hour,
		Endpoint:          "localhost",
	}.withDefaults().validate()
	require.Error(t, err)
	for _, want := range []string{"Consumer name is required", "QueueName", "WaitTimeSeconds", "MaxMessages", "Receivers", "VisibilityTimeout", "MaxExtension", "Endpoint"} {
		require.ErrorContains(t, err, want)
	}
	require.NoError(t, Config{QueueName: "q.fifo", Consumer: "c"}.withDefaults().validate())
	require.ErrorContains(t, Config{Consumer: "c"}.withDefaults().validate(), "QueueURL or QueueName")

	c := Config{QueueName: "q", Consumer: "c", WaitTimeSeconds: NoWait}.withDefaults()
	require.Equal(t, 0, c.WaitTimeSeconds)
	require.Equal(t, WaitTimeSecondsDefault, Config{}.withDefaults().WaitTimeSeconds)
}

func TestDeadLetterName(t *testing.T) {
	for _, tc := range []struct{ queue, consumer, want string }{
		{"payments", "ledger", "payments-ledger-dlq"},
		{"payments", "led_ger", "payments-led_ger-dlq"},
		{"payments.fifo", "ledger", "payments-ledger-dlq.fifo"},
		{"payments", "billing.v2/eu", "payments-billing_2ev2_2feu--dlq"},
		{"pay-ments", "ledger-eu", "pay-ments-ledger_2deu--dlq"},
	} {
		got, err := DeadLetterQueueName(tc.queue, tc.consumer)
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
		require.True(t, ValidQueueName(got), got)
	}
}

// TestDeadLetterNameTooLong: a source and consumer name too long for the
// derived dead-letter queue name are refused, the error naming the limit
// and the name earlier versions derived (a cut name with a hash), so a
// deployment can keep its queue by naming it. Catches a name cut to fit,
// which two pairs could share.
func TestDeadLetterNameTooLong(t *testing.T) {
	for _, tc := range []struct{ queue, consumer, earlier string }{
		{strings.Repeat("q", 70), "ledger-eu-west-1", strings.Repeat("q", 63) + "-a3173033c749-dlq"},
		{strings.Repeat("q", 66) + ".fifo", "ledger", strings.Repeat("q", 58) + "-a1251e08a3b8-dlq.fifo"},
		{strings.Repeat("q", 66), "ledger.eu", strings.Repeat("q", 66) + "-ledger-eu-dlq"},
	} {
		_, err := DeadLetterQueueName(tc.queue, tc.consumer)
		require.ErrorIs(t, err, ErrNameTooLong)
		require.ErrorContains(t, err, "over SQS's 80")
		require.ErrorContains(t, err, `"`+tc.earlier+`"`)
	}
	got, err := DeadLetterQueueName(strings.Repeat("q", 74), "c")
	require.NoError(t, err, "exactly 80 characters fit")
	require.Len(t, got, 80)
}

func TestVisibilitySecondsRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int32{
		0: 0, time.Nanosecond: 1, 100 * time.Millisecond: 1, time.Second: 1,
		time.Second + time.Nanosecond: 2, 1500 * time.Millisecond: 2, 12 * time.Hour: 43200,
	} {
		require.Equal(t, want, visibilitySeconds(d), d)
	}
}

func TestCheckRedrive(t *testing.T) {
	policy := func(n any) string {
		b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:q-dlq", "maxReceiveCount": n})
		return string(b)
	}
	require.NoError(t, checkRedrive(policy(6), 5))
	require.NoError(t, checkRedrive(policy("6"), 5), "SQS returns maxReceiveCount as a number or a string")
	err := checkRedrive(policy(5), 5)
	require.ErrorContains(t, err, "after 5 receives")
	require.ErrorContains(t, err, "set MaxAttempts below 5")
	require.Error(t, checkRedrive(`{"deadLetterTargetArn":"x"}`, 5))
}

func TestMaxDelayRefusedAtStartup(t *testing.T) {
	src := &Source{cfg: Config{MaxExtension: time.Hour, Consumer: "c"}}
	require.Equal(t, 11*time.Hour, src.Capabilities().MaxDelay)
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	_, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "c", Retry: retry.Policy{InitialInterval: 12 * time.Hour, MaxInterval: 12 * time.Hour}})
	require.ErrorContains(t, err, "supports at most 11h0m0s")
	_, err = consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "c", Retry: retry.Policy{InitialInterval: time.Hour, MaxInterval: 5 * time.Hour}})
	require.NoError(t, err)
}

func str(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

func TestPackAttributesNeverExceedsTen(t *testing.T) {
	orig := map[string]types.MessageAttributeValue{IDAttributeDefault: str("id-1")}
	for i := range 9 {
		orig[fmt.Sprintf("h%d", i)] = str(fmt.Sprintf("v%d", i))
	}
	orig["bin"] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}}
	msg := &consumer.Message{ID: "id-1", Headers: Headers(orig), Source: "q", Partition: -1, Offset: -1}
	headers := consumer.FailureHeaders(msg, consumer.Failure{Consumer: "c", Err: fmt.Errorf("boom"), Reason: consumer.ReasonExhausted, NextAttempt: 3})

	packed := packAttributes(orig, headers, IDAttributeDefault)
	require.LessOrEqual(t, len(packed), maxAttributes)
	require.Contains(t, packed, FailureAttribute)
	require.Equal(t, "id-1", aws.ToString(packed[IDAttributeDefault].StringValue), "the ID attribute is kept first")
	require.Equal(t, headers, Headers(packed), "every header survives the round trip")

	// Few attributes: the originals stay as they were, the failure context is one attribute.
	small := map[string]types.MessageAttributeValue{IDAttributeDefault: str("id-2"), "traceparent": str("00-abc-def-01")}
	msg = &consumer.Message{ID: "id-2", Headers: Headers(small), Source: "q", Partition: -1, Offset: -1}
	headers = consumer.FailureHeaders(msg, consumer.Failure{Consumer: "c", Err: fmt.Errorf("boom"), Reason: consumer.ReasonPermanent, NextAttempt: 1})
	packed = packAttributes(small, headers, IDAttributeDefault)
	require.Len(t, packed, 3)
	require.Equal(t, small["traceparent"], packed["traceparent"])
	require.Equal(t, headers, Headers(packed))
	var ctxJSON map[string]string
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(packed[FailureAttribute].StringValue)), &ctxJSON))
	require.Equal(t, consumer.ReasonPermanent, ctxJSON[consumer.HeaderDeadLetterReason])
	require.NotContains(t, ctxJSON, "traceparent")

	// A malformed failure attribute is kept as a header, not dropped.
	require.Equal(t, "{oops", Headers(map[string]types.MessageAttributeValue{FailureAttribute: str("{oops")})[FailureAttribute])
}

func TestRenewAfter(t *testing.T) {
	for v, want := range map[time.Duration]time.Duration{
		30 * time.Second: 21 * time.Second, // 70 %
		5 * time.Second:  3 * time.Second,  // leaves 2s to reach SQS
		2 * time.Second:  time.Second,      // but never before half the window
		time.Second:      500 * time.Millisecond,
	} {
		require.Equal(t, want, renewAfter(v), v)
	}
}
