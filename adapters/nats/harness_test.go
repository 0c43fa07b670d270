package nats

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testAckWait is short, so a message lost in flight on a Close (sent by the
// server after the pull subscription was drained) comes back within the
// suite's CloseDeadline.
const testAckWait = 4 * time.Second

// conn connects to the test server and deletes, at cleanup, every stream
// whose subject starts with one of the sources given to track.
type conn struct {
	url string
	nc  *nats.Conn
	js  jetstream.JetStream
}

func connect(t testing.TB) *conn {
	t.Helper()
	url := envtest.NATS(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &conn{url: url, nc: nc, js: js}
}

// cleanup removes the source, retry and dead-letter streams of source and
// consumerName when t ends.
func (c *conn) cleanup(t testing.TB, source, consumerName string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range []string{source, RetrySubject(source, consumerName), DeadLetterSubject(source, consumerName)} {
			_ = c.js.DeleteStream(ctx, StreamName(s))
		}
	})
}

func (c *conn) newSource(t testing.TB, cfg Config) *Source {
	t.Helper()
	cfg.URL = c.url
	if cfg.AckWait == 0 {
		cfg.AckWait = testAckWait
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.cleanup(t, cfg.Source, cfg.Consumer)
	return src
}

func (c *conn) publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := NewPublisher(c.js, "").Publish(ctx, source, msgs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

func (c *conn) deadLetters(t testing.TB, source, name string) []*consumer.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := OpenDeadLetters(ctx, c.js, source, name, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []*consumer.Message
	for {
		ls, err := d.Next(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			return out
		}
		for _, l := range ls {
			out = append(out, l.Message)
		}
	}
}

// harness runs the conformance suite against the local server.
type harness struct{}

var (
	_ adaptertest.Harness     = harness{}
	_ adaptertest.CopyFaulter = harness{}
)

func (harness) NewSource(t testing.TB, source, name string) consumer.Source {
	c := connect(t)
	prefetch := 8
	if strings.HasSuffix(t.Name(), "/Backpressure/MaxInFlight") {
		prefetch = 4
	}
	return c.newSource(t, Config{Source: source, Consumer: name, Prefetch: prefetch})
}

func (harness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	c := connect(t)
	c.cleanup(t, source, adaptertest.ConsumerName)
	c.publish(t, source, msgs...)
}

func (harness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	c := connect(t)
	deadline := time.Now().Add(timeout)
	for {
		got := c.deadLetters(t, source, name)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FailNextCopy seals the stream the next op copy of source goes to (the
// retry or the dead-letter stream): the server refuses every publish to a
// sealed stream, so Retry or DeadLetter fails and nothing is stored. (A
// deleted stream would do too, but the Source recreates it when it notices
// its consumer gone.) The stream stays readable, and the suite needs no copy
// of this source after.
func (harness) FailNextCopy(t testing.TB, source string, op adaptertest.CopyOp) {
	t.Helper()
	c := connect(t)
	subject := DeadLetterSubject(source, adaptertest.ConsumerName)
	if op == adaptertest.CopyRetry {
		subject = RetrySubject(source, adaptertest.ConsumerName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.js.Stream(ctx, StreamName(subject))
	if err != nil {
		t.Fatalf("the stream of %s: %v", subject, err)
	}
	cfg := s.CachedInfo().Config
	cfg.Sealed = true
	if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("sealing the stream of %s: %v", subject, err)
	}
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, harness{})
}
