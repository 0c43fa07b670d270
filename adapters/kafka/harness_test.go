package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if err := logCheck.Err(); err != nil && code == 0 {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(code)
	}))
}

// logCheck sees every line the tests' loggers write (see envtest.LogCheck).
var logCheck = envtest.NewLogCheck(func() slog.Handler {
	if os.Getenv("ONCELY_TEST_LOG") != "" {
		return slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	return slog.DiscardHandler
}())

// testLogger discards logs unless ONCELY_TEST_LOG is set; TestMain fails
// the run when a line carried a time.Duration attribute.
func testLogger() *slog.Logger { return slog.New(logCheck) }

// brokers returns the Kafka of the integration tests: the Apache Kafka in
// KAFKA_BROKERS (scripts/test.sh starts one; required under CI=true) or, outside
// CI when it is unset, a one-broker kfake cluster. Neither creates topics on
// first use and both default to one partition, so a test creates the topics it
// produces to before its Source does (createTopic), and names its topic and
// group uniquely: the real broker keeps both across tests and runs.
func brokers(t testing.TB) []string {
	t.Helper()
	return kafkatest.Brokers(t, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
}

// createTopic creates topic with partitions partitions unless it exists.
func createTopic(t testing.TB, addrs []string, topic string, partitions int32) {
	t.Helper()
	kafkatest.CreateTopic(t, addrs, topic, partitions)
}

// newCluster starts an in-process kfake cluster closed at the end of t, for
// the tests that need kfake itself: its control hooks or several brokers.
func newCluster(t testing.TB, brokers int, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(brokers), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// client returns a plain franz-go client closed at the end of t.
func client(t testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// harness runs the adaptertest conformance suite on brokers(t).
type harness struct {
	addrs []string
	tune  func(*Config)

	once    sync.Once
	prod    *kgo.Client
	created sync.Map // source topics created by Publish
}

// harnessPartitions is the partition count of the suite's source topics.
const harnessPartitions = 3

// group is the consumer group of consumer name on source: unique per source,
// as groups outlive the test on a real broker.
func (h *harness) group(source, name string) string { return name + "-" + source }

func (h *harness) config(source, name string) Config {
	cfg := Config{
		Brokers:         h.addrs,
		Topic:           source,
		Group:           h.group(source, name),
		TopicPartitions: harnessPartitions,
		CommitInterval:  100 * time.Millisecond,
		Logger:          testLogger(),
	}
	if h.tune != nil {
		h.tune(&cfg)
	}
	return cfg
}

func (h *harness) NewSource(t testing.TB, source, name string) consumer.Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := New(ctx, h.config(source, name))
	if err != nil {
		t.Fatal(err)
	}
	h.track(source, s)
	return namedSource{s, name}
}

func (h *harness) producer(t testing.TB) *kgo.Client {
	h.once.Do(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...))
		if err != nil {
			t.Fatal(err)
		}
		h.prod = cl
	})
	return h.prod
}

func (h *harness) close() {
	if h.prod != nil {
		h.prod.Close()
	}
}

func (h *harness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	if _, done := h.created.LoadOrStore(source, true); !done {
		createTopic(t, h.addrs, source, harnessPartitions)
	}
	publish(t, h.producer(t), source, msgs...)
}

// publish produces msgs with their ID in the message-id header.
func publish(t testing.TB, cl *kgo.Client, topic string, msgs ...*consumer.Message) {
	t.Helper()
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		h := make(map[string]string, len(m.Headers)+1)
		for k, v := range m.Headers {
			h[k] = v
		}
		if m.ID != "" {
			h[consumer.HeaderMessageID] = m.ID
		}
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(m.Key), Value: m.Body, Headers: recordHeaders(h)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("publish to %s: %v", topic, err)
	}
}

func (h *harness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	return readAll(t, h.addrs, DeadLetterTopic(source, h.group(source, name)), n, timeout)
}

// readAll waits up to timeout until topic holds at least n records, then
// reads every record in it (without a group) as Messages.
func readAll(t testing.TB, addrs []string, topic string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	cl := client(t, addrs)
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(timeout)
	var ends kadm.ListedOffsets
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		ends, err = adm.ListEndOffsets(ctx, topic)
		cancel()
		if err != nil {
			t.Fatalf("end offsets of %s: %v", topic, err)
		}
		total := int64(0)
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				total += o.Offset
			}
		})
		if total >= int64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	parts := map[int32]kgo.Offset{}
	for p := range want {
		parts[p] = kgo.NewOffset().AtStart()
	}
	rd := client(t, addrs, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*consumer.Message
	s := &Source{cfg: Config{IDHeaders: []string{consumer.HeaderMessageID}}}
	for len(want) > 0 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, s.message(r, nil))
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

func TestConformance(t *testing.T) {
	t.Parallel()
	h := &harness{addrs: brokers(t)}
	defer h.close()
	adaptertest.Run(t, h)
}

func TestConformanceInPlace(t *testing.T) {
	t.Parallel()
	h := &harness{addrs: brokers(t), tune: func(c *Config) { c.RetryMode = RetryInPlace }}
	defer h.close()
	adaptertest.Run(t, h)
}
