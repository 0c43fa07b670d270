package rabbitmq

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/retry"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	code := m.Run()
	closePublisher()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
		if err := logCheck().Err(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// retryFast is a quick reconnect backoff for tests.
var retryFast = retry.Policy{InitialInterval: 50 * time.Millisecond, MaxInterval: time.Second}

// testTiers are short retry tiers for tests.
var testTiers = retry.Tiers{100 * time.Millisecond, 300 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}

// logCheck sees every line the tests' loggers write (see envtest.LogCheck);
// TestMain fails the run when a line carried a time.Duration attribute.
// (testing.Verbose is known only once the tests run.)
var logCheck = sync.OnceValue(func() *envtest.LogCheck {
	next := slog.DiscardHandler
	if testing.Verbose() {
		next = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	return envtest.NewLogCheck(next)
})

func testLogger() *slog.Logger { return slog.New(logCheck()) }

func uniqueName(prefix string) string {
	return fmt.Sprintf("oncely-rmq-%s-%08x", prefix, rand.Uint32())
}

// newSource opens a Source on cfg (URL, Tiers and Logger filled in when
// empty), closes it and deletes its topology when t ends.
func newSource(t testing.TB, cfg Config) *Source {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = envtest.RabbitMQ(t)
	}
	if cfg.Tiers == nil {
		cfg.Tiers = testTiers
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	if cfg.ReconnectBackoff.InitialInterval == 0 {
		cfg.ReconnectBackoff = retryFast
	}
	cleanupTopology(t, cfg.Queue, cfg.Consumer, cfg.Tiers) // registered first, so it runs after Close
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := src.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return src
}

// cleanupTopology deletes, when t ends, every queue and exchange a Source
// of (queue, consumerName) declares. It is registered before the Source's
// own cleanup, so it runs after the Source closed.
var cleaned sync.Map

func cleanupTopology(t testing.TB, queue, consumerName string, tiers retry.Tiers) {
	t.Helper()
	key := queue + "\x00" + consumerName
	if _, dup := cleaned.LoadOrStore(key, true); dup {
		return
	}
	url := envtest.RabbitMQ(t)
	t.Cleanup(func() {
		defer cleaned.Delete(key)
		conn, err := amqp.Dial(url)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer conn.Close()
		topo := topology{queue: queue, consumer: consumerName, tiers: tiers}
		for _, q := range append([]string{queue, topo.dlq()}, topo.retryNames()...) {
			ch, err := conn.Channel()
			if err != nil {
				t.Errorf("cleanup: %v", err)
				return
			}
			_, _ = ch.QueueDelete(q, false, false, false)
			_ = ch.Close()
		}
		if ch, err := conn.Channel(); err == nil {
			_ = ch.ExchangeDelete(dlxName(queue), false, false)
			_ = ch.Close()
		}
	})
}

// sharedPublisher is one Publisher per test binary.
var (
	pubOnce sync.Once
	pub     *Publisher
	pubErr  error
)

func testURL(t testing.TB) string { return envtest.RabbitMQ(t) }

// openChannel opens a channel on a new connection to the test broker;
// closeConn closes the connection.
func openChannel(t testing.TB) (ch *amqp.Channel, closeConn func()) {
	t.Helper()
	conn, err := amqp.Dial(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if ch, err = conn.Channel(); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return ch, func() { _ = conn.Close() }
}

func publish(t testing.TB, queue string, msgs ...*consumer.Message) {
	t.Helper()
	url := envtest.RabbitMQ(t)
	pubOnce.Do(func() {
		pub, pubErr = NewPublisher(PublisherConfig{URL: url, Logger: testLogger()})
	})
	if pubErr != nil {
		t.Fatal(pubErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, queue, msgs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// closePublisher is called by tests that check for leaked goroutines.
func closePublisher() {
	if pub != nil {
		_ = pub.Close()
	}
	pub, pubErr, pubOnce = nil, nil, sync.Once{}
}

func msgs(prefix string, n int) []*consumer.Message {
	out := make([]*consumer.Message, n)
	for i := range out {
		out[i] = &consumer.Message{ID: fmt.Sprintf("%s-%05d", prefix, i), Body: []byte(fmt.Sprintf("body-%d", i)), Partition: -1, Offset: -1}
	}
	return out
}

// depth returns the number of ready messages in queue.
func depth(t testing.TB, queue string) int {
	t.Helper()
	ch, closeConn := openChannel(t)
	defer closeConn()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspecting %s: %v", queue, err)
	}
	return q.Messages
}

// tryDepth is depth, with ok false when the queue does not exist.
func tryDepth(t testing.TB, queue string) (n int, ok bool) {
	t.Helper()
	ch, closeConn := openChannel(t)
	defer closeConn()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		return 0, false
	}
	return q.Messages, true
}

// browse returns every message in queue without removing it (basic.get
// each, then close the channel so they are requeued). For small queues.
func browse(t testing.TB, queue, keyHeader string) []*consumer.Message {
	t.Helper()
	ch, closeConn := openChannel(t)
	defer closeConn()
	var out []*consumer.Message
	for range 100_000 {
		d, ok, err := ch.Get(queue, false)
		if err != nil {
			t.Fatalf("get from %s: %v", queue, err)
		}
		if !ok {
			break
		}
		out = append(out, MessageFromDelivery(&d, keyHeader, queue))
	}
	_ = ch.Close()
	return out
}

// drain removes and returns the messages ready in queue (as many as it
// held when drain started).
func drain(t testing.TB, queue, keyHeader string) []*consumer.Message {
	t.Helper()
	ch, closeConn := openChannel(t)
	defer closeConn()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspecting %s: %v", queue, err)
	}
	if q.Messages == 0 {
		return nil
	}
	if err := ch.Qos(500, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consuming %s: %v", queue, err)
	}
	var out []*consumer.Message
	timeout := time.After(60 * time.Second)
	for len(out) < q.Messages {
		select {
		case d := <-ds:
			out = append(out, MessageFromDelivery(&d, keyHeader, queue))
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatalf("draining %s: %d of %d messages after 60s", queue, len(out), q.Messages)
		}
	}
	_ = ch.Close()
	return out
}

// rabbitmqctl runs rabbitmqctl with args; it skips t when rabbitmqctl is
// not available (not installed or not allowed).
func rabbitmqctl(t testing.TB, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		envtest.Missing(t, "rabbitmqctl", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// closeConnectionByName makes the broker close the connection(s) whose
// connection_name is name (rabbitmqctl close_connection), like an operator
// or a failing node would.
func closeConnectionByName(t testing.TB, name string) {
	t.Helper()
	out := rabbitmqctl(t, "list_connections", "-q", "--no-table-headers", "pid", "client_properties")
	n := 0
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.Contains(line, `{"connection_name","`+name+`"}`) {
			continue
		}
		pid := strings.Fields(line)[0]
		rabbitmqctl(t, "close_connection", pid, "oncely test: connection closed by the broker")
		n++
	}
	if n == 0 {
		t.Fatalf("no connection named %q in:\n%s", name, out)
	}
}
