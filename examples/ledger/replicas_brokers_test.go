package main

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/adapters/rabbitmq"
	"github.com/oncely/oncely/adapters/sqs"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/retry"
)

// startPartitions is the partition count the Kafka case asks for: one per
// instance, so every instance owns a partition.
const startPartitions = instances

func brokerCases() []brokerCase {
	return []brokerCase{
		{name: "kafka", url: func(t *testing.T) string {
			return "kafka://" + strings.Join(kafkatest.Brokers(t), ",") + "?partitions=" + strconv.Itoa(startPartitions)
		}, topology: kafkaTopology},
		{name: "rabbitmq", url: func(t *testing.T) string { return envtest.RabbitMQ(t) }, topology: rabbitTopology},
		{name: "sqs", url: func(t *testing.T) string {
			return "sqs://us-east-1?wait=1&endpoint=" + url.QueryEscape(envtest.SQS(t))
		}, topology: sqsTopology},
		{name: "redis", url: func(t *testing.T) string { return envtest.Redis(t) + "?lease=5s" }, topology: redisTopology},
		{name: "nats", url: func(t *testing.T) string { return envtest.NATS(t) }, topology: natsTopology},
	}
}

// ledgerTiers are the retry tiers a ledger with its default flags creates:
// its policy (3 attempts, 200 ms then 400 ms) reaches 480 ms.
var ledgerTiers = retry.DefaultTiers.Upto(retry.Policy{MaxAttempts: 3, InitialInterval: 200 * time.Millisecond, MaxInterval: 2 * time.Second}.Reach())

// defaultPolicyTiers are the retry tiers a consumer with the default retry
// policy creates.
var defaultPolicyTiers = retry.DefaultTiers.Upto(retry.Policy{}.Reach())

// kafkaTopology: the source, one topic per tier its policy reaches, the dead-letter
// topic and the events topic (created by the relays' Publish), each with startPartitions partitions, the tiers keeping records a
// week beyond their delay; then deleted.
func kafkaTopology(t *testing.T, brokerURL, source, consumerName, events string, tiers retry.Tiers) {
	u, err := url.Parse(brokerURL)
	require.NoError(t, err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(u.Host, ",")...))
	require.NoError(t, err)
	adm := kadm.NewClient(cl)
	want := []string{source, kafka.DeadLetterTopic(source, consumerName)}
	if events != "" {
		want = append(want, events)
	}
	if floor := retry.DefaultTiers.Upto(retry.Policy{}.Reach()); len(floor) > len(tiers) {
		tiers = floor // a Kafka Source creates the tiers the default policy reaches too
	}
	tierOf := map[string]time.Duration{}
	for _, d := range tiers {
		name := kafka.RetryTopic(source, consumerName, d)
		want = append(want, name)
		tierOf[name] = d
	}
	slices.Sort(want)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !t.Failed() {
			md, err := adm.ListTopics(ctx)
			require.NoError(t, err)
			var got []string
			for name, d := range md {
				if strings.HasPrefix(name, source) {
					got = append(got, name)
					require.NoError(t, d.Err, name)
					require.Len(t, d.Partitions, startPartitions, "partitions of %s", name)
				}
			}
			slices.Sort(got)
			require.Equal(t, want, got, "the topics one instance creates")
			cfgs, err := adm.DescribeTopicConfigs(ctx, want...)
			require.NoError(t, err)
			for _, rc := range cfgs {
				d, tier := tierOf[rc.Name]
				if !tier {
					continue
				}
				require.NoError(t, rc.Err, rc.Name)
				var got string
				for _, c := range rc.Configs {
					if c.Key == "retention.ms" && c.Value != nil {
						got = *c.Value
					}
				}
				require.Equal(t, strconv.FormatInt((d+7*24*time.Hour).Milliseconds(), 10), got, "retention.ms of %s", rc.Name)
			}
		}
		_, _ = adm.DeleteTopics(ctx, want...)
		cl.Close()
	})
}

// rabbitTopology: every queue exists (the events queue declared by the
// relays' Publish), and a sixth instance declaring the
// topology with the arguments it wants is accepted (the broker refuses a
// declaration whose arguments differ); then deleted.
func rabbitTopology(t *testing.T, brokerURL, source, consumerName, events string, tiers retry.Tiers) {
	queues := []string{source, rabbitmq.DeadLetterQueue(source, consumerName)}
	if events != "" {
		queues = append(queues, events)
	}
	for _, d := range tiers {
		queues = append(queues, rabbitmq.RetryQueue(source, consumerName, d))
	}
	t.Cleanup(func() {
		conn, err := amqp.Dial(brokerURL)
		require.NoError(t, err)
		defer conn.Close()
		if !t.Failed() {
			ch, err := conn.Channel()
			require.NoError(t, err)
			for _, q := range queues {
				_, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
				require.NoError(t, err, "queue %s exists", q)
			}
			_ = ch.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := adapters.Open(ctx, brokerURL)
			require.NoError(t, err)
			src, err := b.Source(ctx, source, consumerName)
			require.NoError(t, err, "one more instance declares the same topology")
			require.NoError(t, src.Close(ctx))
			require.NoError(t, b.Close())
		}
		ch, err := conn.Channel()
		require.NoError(t, err)
		defer ch.Close()
		for _, q := range queues {
			_, _ = ch.QueueDelete(q, false, false, false)
		}
		_ = ch.ExchangeDelete(source+".dlx", false, false)
	})
}

// sqsTopology: exactly the source queue, its dead-letter queue and the
// events queue (created by the relays' Publish); then deleted.
func sqsTopology(t *testing.T, brokerURL, source, consumerName, events string, _ retry.Tiers) {
	u, err := url.Parse(brokerURL)
	require.NoError(t, err)
	cl := awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(u.Query().Get("endpoint")),
		Credentials: credentials.NewStaticCredentialsProvider("oncely", "oncely", "")})
	dlq, err := sqs.DeadLetterQueueName(source, consumerName)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := cl.ListQueues(ctx, &awssqs.ListQueuesInput{QueueNamePrefix: aws.String(source)})
		require.NoError(t, err)
		var got []string
		for _, qu := range out.QueueUrls {
			got = append(got, qu[strings.LastIndexByte(qu, '/')+1:])
			_, _ = cl.DeleteQueue(ctx, &awssqs.DeleteQueueInput{QueueUrl: aws.String(qu)})
		}
		slices.Sort(got)
		if !t.Failed() {
			want := []string{source, dlq}
			if events != "" {
				want = append(want, events)
			}
			slices.Sort(want)
			require.Equal(t, want, got, "the queues one instance creates")
		}
	})
}
