package adapters_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// runTwoPairs runs two (source, consumer) pairs whose names, joined with
// the broker's separator, spell the same destinations. Each pair
// dead-letters one message and retries another; then each pair's dead
// letters are listed and redriven. Each pair must see exactly its own:
// its retried copy back in its own source (Attempt 2), one dead letter in
// its list, and its redriven message back in its own source.
func runTwoPairs(t *testing.T, url string, pairs [2][2]string) {
	ctx := t.Context()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	id := func(what string, i int) string { return what + "-" + pairs[i][0] + "-" + pairs[i][1] }
	var srcs [2]consumer.Source
	for i, p := range pairs {
		srcs[i], err = b.Source(ctx, p[0], p[1])
		require.NoError(t, err, "pair %d: %q, %q", i, p[0], p[1])
		defer func() { require.NoError(t, srcs[i].Close(context.Background())) }()
	}
	receive := func(i int) consumer.Delivery {
		return adaptertest.ReceiveN(t, srcs[i], 1, adaptertest.WaitTimeout)[0]
	}
	for i, p := range pairs {
		require.NoError(t, b.Publish(ctx, p[0], &consumer.Message{ID: id("dead", i), Key: "k", Body: []byte("b")}))
		d := receive(i)
		require.Equal(t, id("dead", i), d.Message().ID)
		require.NoError(t, d.DeadLetter(ctx, consumer.FailureHeaders(d.Message(), consumer.Failure{Consumer: p[1], Err: errors.New("bad"), Reason: consumer.ReasonPermanent, NextAttempt: 1})))

		require.NoError(t, b.Publish(ctx, p[0], &consumer.Message{ID: id("retry", i), Key: "k", Body: []byte("b")}))
		d = receive(i)
		require.Equal(t, id("retry", i), d.Message().ID)
		require.NoError(t, d.Retry(ctx, 0, consumer.FailureHeaders(d.Message(), consumer.Failure{Consumer: p[1], Err: errors.New("again"), NextAttempt: 2})))
		d = receive(i)
		require.Equal(t, id("retry", i), d.Message().ID, "pair %d's retried copy comes back to its own source", i)
		require.Equal(t, 2, d.Message().Attempt)
		require.NoError(t, d.Ack(ctx))
	}
	for i, p := range pairs {
		dl, err := b.DeadLetters(ctx, p[0], p[1], 0)
		require.NoError(t, err)
		require.Len(t, dl, 1, "pair %d lists only its own dead letter", i)
		require.Equal(t, id("dead", i), dl[0].Message.ID)
	}
	for i, p := range pairs {
		res, err := b.Redrive(ctx, p[0], p[1], adapters.RedriveOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, res.Redriven, "pair %d", i)
		d := receive(i)
		require.Equal(t, id("dead", i), d.Message().ID, "pair %d's redriven dead letter lands in its own source", i)
		require.NoError(t, d.Ack(ctx))
	}
}

// TestTwoPairsRabbitMQ is the reported case: source "<s>.a.b" with consumer
// "c" and source "<s>.a" with consumer "b.c" once shared their retry and
// dead-letter queues, so a redrive of one consumer's dead letters landed in
// the other's source.
func TestTwoPairsRabbitMQ(t *testing.T) {
	s := adaptertest.SourceName("pairs")
	runTwoPairs(t, envtest.RabbitMQ(t)+"?tiers=100ms,1s", [2][2]string{{s + ".a.b", "c"}, {s + ".a", "b.c"}})
}

func TestTwoPairsKafka(t *testing.T) {
	s := adaptertest.SourceName("pairs")
	runTwoPairs(t, suiteKafka(t)+"?tiers=100ms,1s", [2][2]string{{s + ".a.b", "c"}, {s + ".a", "b.c"}})
}

func TestTwoPairsRedis(t *testing.T) {
	s := adaptertest.SourceName("pairs")
	runTwoPairs(t, envtest.Redis(t)+"?lease=5s", [2][2]string{{s + ".a.b", "c"}, {s + ".a", "b.c"}})
}

func TestTwoPairsNATS(t *testing.T) {
	s := adaptertest.SourceName("pairs")
	runTwoPairs(t, envtest.NATS(t), [2][2]string{{s + ".a_b", "c"}, {s + ".a", "b_c"}})
}

func TestTwoPairsSQS(t *testing.T) {
	s := adaptertest.SourceName("pairs")
	runTwoPairs(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1", [2][2]string{{s + "-a-b", "c"}, {s + "-a", "b-c"}})
}

func TestTwoPairsMemory(t *testing.T) {
	runTwoPairs(t, "mem://", [2][2]string{{"s.a.b", "c"}, {"s.a", "b.c"}})
}
