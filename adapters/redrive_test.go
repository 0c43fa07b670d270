package adapters_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// brokerHarness runs adaptertest.RunRedrive against a Broker opened by URL,
// so the case exercises Broker.Redrive itself on every broker.
type brokerHarness struct{ b adapters.Broker }

var _ adaptertest.RedriveHarness = brokerHarness{}

func (h brokerHarness) NewSource(t testing.TB, source, name string) consumer.Source {
	t.Helper()
	src, err := h.b.Source(t.Context(), source, name)
	require.NoError(t, err)
	return src
}

func (h brokerHarness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	require.NoError(t, h.b.Publish(t.Context(), source, msgs...))
}

// DeadLetters lists every copy: Broker.DeadLetters shows copies with one ID
// once, so each is repeated Copies times.
func (h brokerHarness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		dl, err := h.b.DeadLetters(t.Context(), source, name, 0)
		require.NoError(t, err)
		var out []*consumer.Message
		for _, d := range dl {
			for range d.Copies {
				out = append(out, d.Message)
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h brokerHarness) Redrive(t testing.TB, source, name string, progress func()) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), adaptertest.WaitTimeout)
	defer cancel()
	res, err := h.b.Redrive(ctx, source, name, adapters.RedriveOptions{Progress: func(adapters.RedriveProgress) { progress() }})
	require.NoError(t, err)
	return res.Redriven
}

func runRedrive(t *testing.T, url string) {
	b, err := adapters.Open(t.Context(), url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	adaptertest.RunRedrive(t, brokerHarness{b})
}

func TestRedriveMemory(t *testing.T) { runRedrive(t, "mem://") }

func TestRedriveKafka(t *testing.T) { runRedrive(t, suiteKafka(t)+"?tiers=100ms,1s") }

func TestRedriveRabbitMQ(t *testing.T) { runRedrive(t, envtest.RabbitMQ(t)+"?tiers=100ms,1s") }

func TestRedriveSQS(t *testing.T) {
	runRedrive(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1")
}

func TestRedriveRedis(t *testing.T) { runRedrive(t, envtest.Redis(t)+"?lease=5s") }
