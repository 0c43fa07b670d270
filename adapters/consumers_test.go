package adapters_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

func TestConsumersKafka(t *testing.T)    { runConsumers(t, suiteKafka(t)) }
func TestConsumersRabbitMQ(t *testing.T) { runConsumers(t, envtest.RabbitMQ(t)) }
func TestConsumersSQS(t *testing.T) {
	runConsumers(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&wait=1")
}
func TestConsumersNATS(t *testing.T)   { runConsumers(t, envtest.NATS(t)) }
func TestConsumersRedis(t *testing.T)  { runConsumers(t, envtest.Redis(t)) }
func TestConsumersMemory(t *testing.T) { runConsumers(t, "mem://") }

// runConsumers: once a Source of "ledger" opened, its empty dead-letter
// destination and its backlog read without error, while a consumer name that
// never read the source is ErrNoConsumer on DeadLetters, Redrive, Purge and
// Backlog, naming "ledger" (RabbitMQ: saying the names cannot be listed),
// and nothing about it is created (issue 38: no silent emptiness).
func runConsumers(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*adaptertest.WaitTimeout)
	defer cancel()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	h := brokerHarness{b}
	source := adaptertest.SourceName("consumers")
	const typo = "ledgr"
	h.Publish(t, source, &consumer.Message{ID: "c1", Body: []byte("1")})

	_, err = b.Backlog(ctx, source, "ledger")
	require.ErrorIs(t, err, adapters.ErrNoConsumer, "before any Source of ledger")

	require.NoError(t, h.NewSource(t, source, "ledger").Close(ctx))
	var dls []adapters.DeadLetter
	require.Eventually(t, func() bool { // Kafka's client caches metadata up to 5s
		dls, err = b.DeadLetters(ctx, source, "ledger", 0)
		return !errors.Is(err, adapters.ErrNoConsumer)
	}, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, err, "a consumer with an empty dead-letter destination is no error")
	require.Empty(t, dls)
	_, err = b.Backlog(ctx, source, "ledger")
	require.NoError(t, err)

	rabbit := strings.HasPrefix(url, "amqp")
	names, err := b.Consumers(ctx, source)
	if rabbit {
		require.ErrorIs(t, err, adapters.ErrConsumersUnlisted)
	} else {
		require.NoError(t, err)
		require.Equal(t, []string{"ledger"}, names)
	}
	_, err = b.Consumers(ctx, source+"-missing")
	require.ErrorIs(t, err, adapters.ErrNoSource)

	for op, call := range map[string]func() error{
		"DeadLetters": func() error { _, err := b.DeadLetters(ctx, source, typo, 0); return err },
		"Redrive":     func() error { _, err := b.Redrive(ctx, source, typo, adapters.RedriveOptions{}); return err },
		"Purge":       func() error { _, err := b.Purge(ctx, source, typo, adapters.PurgeOptions{}); return err },
		"Backlog":     func() error { _, err := b.Backlog(ctx, source, typo); return err },
	} {
		err := call()
		require.ErrorIs(t, err, adapters.ErrNoConsumer, op)
		var nc *adapters.NoConsumerError
		require.ErrorAs(t, err, &nc, op)
		require.Equal(t, typo, nc.Consumer, op)
		require.Equal(t, source, nc.Source, op)
		require.Equal(t, !rabbit, nc.Listed, op)
		if rabbit {
			require.Contains(t, err.Error(), "cannot be listed", op)
		} else {
			require.Equal(t, []string{"ledger"}, nc.Known, op)
			require.Contains(t, err.Error(), `its consumers are "ledger"`, op)
		}
	}
	names, err = b.Consumers(ctx, source)
	if !rabbit {
		require.NoError(t, err)
		require.Equal(t, []string{"ledger"}, names, "the refused calls created nothing for %q", typo)
	}
}
