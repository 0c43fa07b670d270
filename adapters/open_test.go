package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/retry"
)

// HTTP keep-alive connections of the SQS client may outlive a test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

func TestOpenRejectsBadURLs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ url, want string }{
		{"", "empty broker URL"},
		{"pulsar://127.0.0.1:6650", `unsupported broker URL scheme "pulsar"`},
		{"127.0.0.1:9092", "supported: kafka://"},
		{"localhost", "has no scheme"},
		{"kafka://", "no broker address"},
		{"kafka://127.0.0.1:1?partitons=3", `unknown query parameter "partitons"`},
		{"kafka://127.0.0.1:1?partitions=zero", `partitions="zero": want a positive integer`},
		{"kafka://127.0.0.1:1?tiers=10s,1s", "tiers must be strictly increasing"},
		{"kafka://127.0.0.1:1?replication_factor=-1&min_insync_replicas=two", `replication_factor="-1": want a positive integer`},
		{"kafka://127.0.0.1:1?replication_factor=-1&min_insync_replicas=two", `min_insync_replicas="two": want a positive integer`},
		{"kafka://127.0.0.1:1?replication_factor=2&min_insync_replicas=3", "min_insync_replicas=3 is above replication_factor=2"},
		// Secure Kafka URLs are checked before anything is dialled; each row
		// catches a setting silently dropped or a password in the message.
		{"kafka://127.0.0.1:1?sasl=scram-sha-512", "sasl=scram-sha-512 needs a user and a password"},
		{"kafkas://u:secret@127.0.0.1:1?sasl=gssapi", `sasl="gssapi": want plain, scram-sha-256 or scram-sha-512`},
		{"kafkas://u@127.0.0.1:1", "SASL needs a user and a password"},
		{"kafkas://u:secret@127.0.0.1:1?tls_ca=/nonexistent/ca.pem", "reading the CA file: open /nonexistent/ca.pem"},
		{"kafkas://u:secret@127.0.0.1:1?tls_ca=/dev/null", `tls_ca="/dev/null": no PEM certificate`},
		{"kafkas://u:secret@127.0.0.1:1?tls_cert=/tmp/c.pem", "tls_cert without tls_key"},
		{"kafkas://u:secret@127.0.0.1:1?tls_key=/tmp/k.pem", "tls_key without tls_cert"},
		{"kafkas://u:secret@127.0.0.1:1?tls_cert=/nonexistent/c.pem&tls_key=/nonexistent/k.pem", "loading the client certificate"},
		{"kafka://u:secret@127.0.0.1:1?tls_ca=/tmp/ca.pem", "tls_ca needs TLS: write kafkas:// or add tls=true"},
		{"kafkas://u:secret@127.0.0.1:1?tls=false", "tls=false contradicts kafkas://"},
		{"kafka://u:secret@127.0.0.1:1?tls=yes", `tls="yes": want true or false`},
		{"kafkas://u:secret@127.0.0.1:1?tls_insecure_skip_verify=maybe", `tls_insecure_skip_verify="maybe"`},
		{"kafkas://u:secret@127.0.0.1:1?tls_sever_name=x", `unknown query parameter "tls_sever_name"`},
		{"kafka://127.0.0.1:1?group_protocol=eager", `group_protocol="eager": want classic or consumer`},
		{"kafka://127.0.0.1:1?session_timeout=10", `session_timeout="10": want a positive duration`},
		{"kafka://127.0.0.1:1?session_timeout=-1s", `session_timeout="-1s": want a positive duration`},
		{"kafka://127.0.0.1:1?group_protocol=consumer&session_timeout=10s", "the session timeout is the broker's group.consumer.session.timeout.ms"},
		{"mem://somewhere", "mem:// takes no host or path"},
		{"mem://?x=1", `unknown query parameter "x"`},
		{"amqp://guest:secret@%zz", "does not parse"},
		{"amqp://guest:secret@127.0.0.1:1/?prefetch=0", "prefetch=0: AMQP reads 0 as unbounded"},
		{"amqp://guest:secret@127.0.0.1:1/?prefetch=-5", `prefetch="-5": want a positive integer`},
		{"amqp://guest:secret@127.0.0.1:1/?max_message_size=1MiB", `max_message_size="1MiB": want a positive integer`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			b, err := adapters.Open(ctx, tc.url)
			require.Error(t, err)
			require.Nil(t, b)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "secret", "passwords are redacted")
		})
	}
	_, err := adapters.Open(ctx, "pulsar://x")
	require.ErrorIs(t, err, adapters.ErrUnsupportedScheme)
	require.Contains(t, err.Error(), "mem://")
}

func TestOpenMemoryIsProcessLocal(t *testing.T) {
	ctx := context.Background()
	a, err := adapters.Open(ctx, "mem://")
	require.NoError(t, err)
	b, err := adapters.Open(ctx, "mem://")
	require.NoError(t, err)
	require.Equal(t, "memory", a.Kind())
	require.NoError(t, a.Publish(ctx, "s", &consumer.Message{ID: "1", Body: []byte("x")}))
	src, err := a.Source(ctx, "s", "c")
	require.NoError(t, err)
	require.NoError(t, src.Close(ctx))
	la, err := a.Backlog(ctx, "s", "c")
	require.NoError(t, err)
	_, err = b.Backlog(ctx, "s", "c")
	require.ErrorIs(t, err, adapters.ErrNoSource, "two mem:// brokers share nothing")
	require.Equal(t, int64(1), la[0].Lag)

	shared := adapters.Memory(a)
	c, err := adapters.Open(ctx, "mem://", adapters.WithMemoryBroker(shared))
	require.NoError(t, err)
	lc, err := c.Backlog(ctx, "s", "c")
	require.NoError(t, err)
	require.Equal(t, int64(1), lc[0].Lag, "WithMemoryBroker shares one broker")
	for _, br := range []adapters.Broker{a, b, c} {
		require.NoError(t, br.Close())
	}
}

func TestBrokerMemory(t *testing.T) {
	testBroker(t, "mem://")
}

func TestBrokerKafka(t *testing.T) {
	testBroker(t, suiteKafka(t)+"?tiers=100ms,1s")
}

func TestBrokerRabbitMQ(t *testing.T) {
	testBroker(t, envtest.RabbitMQ(t)+"?tiers=100ms,1s&prefetch=32") // the runtime below runs MaxInFlight 32
}

func TestBrokerSQS(t *testing.T) {
	testBroker(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1")
}

// testBroker runs the Broker contract against url: publish, consume with the
// runtime, list dead letters, redrive with filters and a dry run, consume the
// redriven message at attempt 1 with its ID, and report the backlog.
func testBroker(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	source := fmt.Sprintf("payments-%d", rand.Uint64())
	const name = "ledger"

	var msgs []*consumer.Message
	for i := range 6 {
		body := "ok"
		if i == 2 || i == 4 {
			body = "bad"
		}
		msgs = append(msgs, &consumer.Message{ID: fmt.Sprintf("m%d", i), Key: fmt.Sprintf("k%d", i), Body: []byte(body), Headers: map[string]string{"app": "test"}})
	}
	require.NoError(t, b.Publish(ctx, source, msgs...))

	failBad := func(_ context.Context, m *consumer.Message) error {
		if string(m.Body) == "bad" {
			return consumer.Permanent(fmt.Errorf("bad payment %s", m.ID))
		}
		return nil
	}
	seen := consume(t, ctx, b, source, name, 6, failBad)
	require.Len(t, seen, 6)

	dls, err := b.DeadLetters(ctx, source, name, 0)
	require.NoError(t, err)
	require.Len(t, dls, 2)
	ids := []string{dls[0].Message.ID, dls[1].Message.ID}
	require.ElementsMatch(t, []string{"m2", "m4"}, ids)
	for _, d := range dls {
		require.Equal(t, consumer.ReasonPermanent, d.Reason())
		require.Equal(t, name, d.Consumer())
		require.Equal(t, 1, d.Attempts())
		require.Equal(t, source, d.Source())
		require.Equal(t, 1, d.Copies)
		require.Equal(t, "bad", string(d.Message.Body))
		require.Equal(t, "test", d.Message.Header("app"))
		require.Contains(t, d.Error(), "bad payment "+d.Message.ID)
		require.WithinDuration(t, time.Now(), d.FailedAt(), time.Minute)
	}
	one, err := b.DeadLetters(ctx, source, name, 1)
	require.NoError(t, err)
	require.Len(t, one, 1)

	dry, err := b.Redrive(ctx, source, name, adapters.RedriveOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, adapters.RedriveResult{Seen: 2, Redriven: 2}, dry)
	none, err := b.Redrive(ctx, source, name, adapters.RedriveOptions{Reason: consumer.ReasonExhausted})
	require.NoError(t, err)
	require.Equal(t, adapters.RedriveResult{Seen: 2, Skipped: 2}, none)
	var progress []adapters.RedriveProgress
	res, err := b.Redrive(ctx, source, name, adapters.RedriveOptions{ErrorContains: "payment m4", Rate: 1000, Progress: func(p adapters.RedriveProgress) { progress = append(progress, p) }})
	require.NoError(t, err)
	require.Equal(t, adapters.RedriveResult{Seen: 2, Redriven: 1, Skipped: 1}, res)
	require.Len(t, progress, 2)
	require.GreaterOrEqual(t, progress[1].Total, 2, "the depth at the start (approximate on SQS)")
	require.Equal(t, 1, progress[1].Redriven)

	dls, err = b.DeadLetters(ctx, source, name, 0)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "m2", dls[0].Message.ID)

	again := consume(t, ctx, b, source, name, 1, func(context.Context, *consumer.Message) error { return nil })
	require.Len(t, again, 1)
	m := again[0]
	require.Equal(t, "m4", m.ID)
	require.Equal(t, "k4", m.Key)
	require.Equal(t, "bad", string(m.Body))
	require.Equal(t, 1, m.Attempt, "redrive resets the attempt count")
	require.Equal(t, "test", m.Header("app"))
	require.Empty(t, m.Header(consumer.HeaderDeadLetterReason))
	require.Empty(t, m.Header(consumer.HeaderError))

	lines, err := b.Backlog(ctx, source, name)
	require.NoError(t, err)
	var lag, dead int64
	for _, l := range lines {
		lag += max(0, l.Lag)
		dead += max(0, l.DeadLetters)
	}
	require.Equal(t, int64(0), lag, "everything consumed: %+v", lines)
	require.Equal(t, int64(1), dead, "m2 is still dead-lettered: %+v", lines)
}

// consume runs a Consumer over (source, name) until n deliveries settled
// for good, and returns the messages the handler saw last per ID.
func consume(t *testing.T, ctx context.Context, b adapters.Broker, source, name string, n int, h consumer.HandlerFunc) []*consumer.Message {
	t.Helper()
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []*consumer.Message
	done := make(chan struct{})
	obs := observerFunc(func(ev consumer.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Outcome {
		case consumer.OutcomeProcessed, consumer.OutcomeDeadLettered, consumer.OutcomeDuplicate:
			seen = append(seen, ev.Message)
			if len(seen) == n {
				close(done)
			}
		}
	})
	c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: name, Concurrency: 4, Observer: obs,
		Retry: retry.Policy{MaxAttempts: 1, InitialInterval: 100 * time.Millisecond}})
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-done:
	case err := <-runErr:
		t.Fatalf("consumer stopped early: %v", err)
	case <-ctx.Done():
		t.Fatalf("only %d of %d messages settled", len(seen), n)
	}
	require.NoError(t, c.Stop(ctx))
	mu.Lock()
	defer mu.Unlock()
	return seen
}

type observerFunc func(consumer.Event)

func (f observerFunc) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (observerFunc) BreakerChanged(bool)                            {}

var _ = errors.New
