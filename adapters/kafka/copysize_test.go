package kafka

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// createTopics creates topics with one partition and max.message.bytes
// set to maxBytes (0: the broker's default).
func createTopics(t testing.TB, addrs []string, maxBytes int, topics ...string) {
	t.Helper()
	var cfg map[string]*string
	if maxBytes > 0 {
		cfg = map[string]*string{"max.message.bytes": kadm.StringPtr(strconv.Itoa(maxBytes))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadmClient(t, addrs).CreateTopics(ctx, 1, 1, cfg, topics...)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
}

// setMaxBytes alters topics' max.message.bytes.
func setMaxBytes(t testing.TB, addrs []string, maxBytes int, topics ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadmClient(t, addrs).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr(strconv.Itoa(maxBytes))}}, topics...)
	require.NoError(t, err)
	for _, r := range resp {
		require.NoError(t, r.Err, r.Name)
	}
	// The broker applies the change through its metadata log, after the
	// answer: wait until it describes the new limit, which its produce
	// path then enforces.
	want := strconv.Itoa(maxBytes)
	require.Eventually(t, func() bool {
		rcs, err := kadmClient(t, addrs).DescribeTopicConfigs(ctx, topics...)
		if err != nil {
			return false
		}
		seen := 0
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == "max.message.bytes" {
					if c.MaybeValue() != want {
						return false
					}
					seen++
				}
			}
		}
		return seen == len(topics)
	}, 10*time.Second, 20*time.Millisecond, "max.message.bytes=%s on %v", want, topics)
}

// failureHeaders are a copy's headers with a large stack and error.
func failureHeaders(attempt int, extra ...string) map[string]string {
	h := map[string]string{
		consumer.HeaderAttempt: strconv.Itoa(attempt),
		consumer.HeaderStack:   strings.Repeat("s", 8<<10),
		consumer.HeaderError:   strings.Repeat("e", 2<<10),
		"x-app":                "kept",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

// noise returns n incompressible bytes (the default producer compresses).
func noise(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Copies are fitted to the copy topic's max.message.bytes, described at
// start: a retry copy loses its stack, a retry copy that cannot fit is
// refused with ErrCopyRefused (its original stays unsettled), and a dead
// letter that cannot fit otherwise loses its body to the size and SHA-256
// markers, keeping its failure context.
func TestCopyFittedToTopicLimit(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("fit")
	group := topic // unique: a real broker keeps groups across runs
	const tier = 100 * time.Millisecond
	tierTopic, dlq := RetryTopic(topic, group, tier), DeadLetterTopic(topic, group)
	createTopics(t, addrs, 0, topic)
	createTopics(t, addrs, 20000, tierTopic, dlq)
	var produced produceCounter
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: retry.Tiers{tier}, Opts: []kgo.Opt{kgo.WithHooks(&produced)}})
	defer src.Close(context.Background())
	require.Equal(t, int32(20000), src.batchLimit(dlq))
	require.Equal(t, int32(20000), src.batchLimit(tierTopic))
	big, huge := noise(15000), noise(25000)
	publish(t, client(t, addrs), topic,
		&consumer.Message{ID: "big", Key: "k", Body: big},
		&consumer.Message{ID: "huge", Key: "k", Body: huge})
	ds := byID(t, receiveN(t, src, 2, 20*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	require.NoError(t, ds["big"].Retry(ctx, tier, failureHeaders(2)))
	require.True(t, ds["big"].(consumer.CopyTrimmer).CopyTrimmed())
	err := ds["huge"].Retry(ctx, tier, failureHeaders(2))
	require.ErrorIs(t, err, consumer.ErrCopyRefused)
	require.False(t, ds["huge"].(*delivery).settled.Load(), "a refused retry leaves the original unsettled")
	require.NoError(t, ds["huge"].DeadLetter(ctx, failureHeaders(2, consumer.HeaderDeadLetterReason, consumer.ReasonRetryRefused)))
	require.True(t, ds["huge"].(consumer.CopyTrimmer).CopyTrimmed())

	retried := receiveN(t, src, 1, 10*time.Second)[0].Message()
	require.Equal(t, "big", retried.ID)
	require.Equal(t, big, retried.Body, "a retry copy keeps its body")
	require.Empty(t, retried.Header(consumer.HeaderStack), "the stack went first")
	require.Equal(t, strings.Repeat("e", 2<<10), retried.Header(consumer.HeaderError), "the error fitted")
	require.Equal(t, "kept", retried.Header("x-app"))

	dl := readAll(t, addrs, dlq, 1, 10*time.Second)
	require.Len(t, dl, 1)
	m := dl[0]
	require.Equal(t, "huge", m.ID)
	require.Equal(t, "k", m.Key)
	require.Empty(t, m.Body)
	require.Equal(t, "25000", m.Header(consumer.HeaderBodyRemovedSize))
	require.Equal(t, sha(huge), m.Header(consumer.HeaderBodyRemovedSHA256))
	require.Equal(t, consumer.ReasonRetryRefused, m.Header(consumer.HeaderDeadLetterReason))
	require.Equal(t, "kept", m.Header("x-app"))
	require.NotEmpty(t, m.Header(consumer.HeaderError))
	require.Empty(t, readAll(t, addrs, tierTopic, 2, 0)[1:], "only the big copy in the tier")
	require.Equal(t, map[string]int{tierTopic: 1, dlq: 1}, produced.counts(), "each copy fitted before its one produce")
}

// produceCounter counts the records a client produced (or tried to), per
// topic, including those it refused before sending.
type produceCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *produceCounter) OnProduceRecordBuffered(r *kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.Topic]++
}

func (c *produceCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// A copy the broker refuses as too large although it fitted the limit
// described at start (the topic's limit was lowered since): a dead letter
// is produced again without its body, a retry copy is refused with
// ErrCopyRefused wrapping the broker's MESSAGE_TOO_LARGE.
func TestCopyRefusedByBroker(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("refused")
	group := topic // unique: a real broker keeps groups across runs
	const tier = 100 * time.Millisecond
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, Tiers: retry.Tiers{tier}})
	defer src.Close(context.Background())
	setMaxBytes(t, addrs, 5000, RetryTopic(topic, group, tier), DeadLetterTopic(topic, group))
	body := noise(8000)
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "m", Key: "k", Body: body})
	d := receiveN(t, src, 1, 20*time.Second)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	err := d.Retry(ctx, tier, map[string]string{consumer.HeaderAttempt: "2", consumer.HeaderError: "boom"})
	require.ErrorIs(t, err, consumer.ErrCopyRefused)
	require.ErrorIs(t, err, kerr.MessageTooLarge)
	require.NoError(t, d.DeadLetter(ctx, map[string]string{consumer.HeaderError: "boom", consumer.HeaderDeadLetterReason: consumer.ReasonRetryRefused}))
	require.True(t, d.(consumer.CopyTrimmer).CopyTrimmed())
	dl := readAll(t, addrs, DeadLetterTopic(topic, group), 1, 10*time.Second)
	require.Len(t, dl, 1)
	require.Empty(t, dl[0].Body)
	require.Equal(t, "8000", dl[0].Header(consumer.HeaderBodyRemovedSize))
	require.Equal(t, sha(body), dl[0].Header(consumer.HeaderBodyRemovedSHA256))
	require.Equal(t, "boom", dl[0].Header(consumer.HeaderError))
}

// Dead letters produced at once, each within the topic's limit but not two
// together, keep their bodies: the client's batches to a copy topic are
// bounded by the topic's limit too.
func TestConcurrentCopiesStayUnderTopicLimit(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("batch")
	group := topic // unique: a real broker keeps groups across runs
	dlq := DeadLetterTopic(topic, group)
	createTopics(t, addrs, 0, topic)
	createTopics(t, addrs, 20000, dlq)
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: retry.Tiers{time.Second}})
	defer src.Close(context.Background())
	const n = 8
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprint("m", i), Key: fmt.Sprint(i), Body: noise(9000)}
	}
	publish(t, client(t, addrs), topic, msgs...)
	ds := receiveN(t, src, n, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.DeadLetter(ctx, map[string]string{consumer.HeaderDeadLetterReason: consumer.ReasonPermanent})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, i)
		require.False(t, ds[i].(consumer.CopyTrimmer).CopyTrimmed(), i)
	}
	dl := readAll(t, addrs, dlq, n, 10*time.Second)
	require.Len(t, dl, n)
	for _, m := range dl {
		require.Len(t, m.Body, 9000, m.ID)
	}
}

// copySize never undercounts a one-record batch as the broker measures it
// (the record batch bytes of the produce request), and overcounts by little.
func TestCopySizeConservative(t *testing.T) {
	t.Parallel()
	c := newFake(t)
	addrs := c.ListenAddrs()
	topic := uniqueTopic("size")
	createTopics(t, addrs, 0, topic)
	var mu sync.Mutex
	var sizes []int
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range kreq.(*kmsg.ProduceRequest).Topics {
			for _, rp := range rt.Partitions {
				mu.Lock()
				sizes = append(sizes, len(rp.Records))
				mu.Unlock()
			}
		}
		return nil, nil, false
	})
	cl := client(t, addrs, kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, tc := range []struct {
		key, body int
		headers   map[string]string
	}{
		{0, 0, nil},
		{3, 10, map[string]string{"message-id": "a"}},
		{100, 5000, map[string]string{"message-id": "abc", consumer.HeaderError: strings.Repeat("e", 300), "x": ""}},
		{20, 200000, failureHeaders(3)},
	} {
		key, body := []byte(strings.Repeat("k", tc.key)), []byte(strings.Repeat("b", tc.body))
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: key, Value: body, Headers: recordHeaders(tc.headers)}).FirstErr())
		mu.Lock()
		got := sizes[len(sizes)-1]
		mu.Unlock()
		est := copySize(len(key))(body, tc.headers)
		require.GreaterOrEqual(t, est, got, "case %d undercounted", i)
		require.LessOrEqual(t, est-got, 64+8*len(tc.headers), "case %d overcounted", i)
	}
}

// A copy topic's batch limit is the smaller of the producer's and the
// topic's, never below franz-go's minimum; an undescribed topic gets the
// producer's.
func TestBatchLimit(t *testing.T) {
	t.Parallel()
	s := &Source{producerMax: func(string) int32 { return 100000 }}
	s.topicMax.Store(&map[string]int32{"small": 50000, "large": 200000, "tiny": 100})
	for topic, want := range map[string]int32{"small": 50000, "large": 100000, "tiny": minBatchBytes, "unknown": 100000} {
		require.Equal(t, want, s.batchLimit(topic), topic)
	}
}
