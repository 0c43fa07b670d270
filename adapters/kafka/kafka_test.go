package kafka

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/memory"
)

func uniqueTopic(prefix string) string {
	return fmt.Sprintf("%s-%08x", prefix, rand.Uint32())
}

func newSource(t testing.TB, cfg Config) *Source {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = 100 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := New(ctx, cfg)
	require.NoError(t, err)
	return s
}

// runConsumer runs a Consumer over src until the returned stop is called
// (or the test ends) and fails t when Run fails.
func runConsumer(t testing.TB, src consumer.Source, h consumer.Handler, cfg consumer.Config, mws ...consumer.Middleware) (stop func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	_, stop = adaptertest.RunConsumer(t, src, h, cfg, mws...)
	return stop
}

// recorder collects handled messages.
type recorder struct {
	mu   sync.Mutex
	msgs []*consumer.Message
	at   []time.Time
}

func (r *recorder) add(m *consumer.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m.Clone())
	r.at = append(r.at, time.Now())
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func (r *recorder) all() []*consumer.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// A plain franz-go producer's records arrive with ID, key and headers
// intact, whichever ID header they use.
func TestPlainProducerHeaders(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("plain")
	group := topic
	createTopic(t, addrs, topic, 1)
	prod := client(t, addrs)
	ctx := context.Background()
	recs := []*kgo.Record{
		{Topic: topic, Key: []byte("k1"), Value: []byte("v1"), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte("id-1")}, {Key: "x-trace", Value: []byte("abc")}, {Key: "content-type", Value: []byte("application/json")}}},
		{Topic: topic, Key: []byte("k2"), Value: []byte("v2"), Headers: []kgo.RecordHeader{{Key: "ce_id", Value: []byte("ce-2")}, {Key: "ce_type", Value: []byte("order.created")}}},
		{Topic: topic, Key: nil, Value: []byte("v3"), Headers: []kgo.RecordHeader{{Key: "x-only", Value: []byte("no id")}}},
	}
	require.NoError(t, prod.ProduceSync(ctx, recs...).FirstErr())

	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, DeriveID: true})
	var rec recorder
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		rec.add(m)
		return nil
	}), consumer.Config{Name: group})
	adaptertest.WaitUntil(t, 20*time.Second, "three records", func() bool { return rec.len() >= 3 })
	stop()

	byBody := map[string]*consumer.Message{}
	for _, m := range rec.all() {
		byBody[string(m.Body)] = m
	}
	m1, m2, m3 := byBody["v1"], byBody["v2"], byBody["v3"]
	require.NotNil(t, m1)
	require.NotNil(t, m2)
	require.NotNil(t, m3)
	require.Equal(t, "id-1", m1.ID)
	require.Equal(t, "k1", m1.Key)
	require.Equal(t, map[string]string{"message-id": "id-1", "x-trace": "abc", "content-type": "application/json"}, m1.Headers)
	require.Equal(t, topic, m1.Source)
	require.Equal(t, 1, m1.Attempt)
	require.False(t, m1.Timestamp.IsZero())
	require.Equal(t, "ce-2", m2.ID)
	require.Equal(t, "order.created", m2.Header("ce_type"))
	require.Equal(t, fmt.Sprintf("%s/%d/%d", topic, m3.Partition, m3.Offset), m3.ID, "derived ID")
	require.Equal(t, "", m3.Key)
	require.Equal(t, 3, rec.len(), "handled once each")
}

// A record failing twice is seen at attempts 1, 2 and 3, each copy from a
// retry tier topic no sooner than its delay, with the failure headers.
func TestRetryTiers(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("tiers")
	group := topic
	tiers := retry.Tiers{200 * time.Millisecond, time.Second}
	createTopic(t, addrs, topic, 1)
	prod := client(t, addrs)
	publish(t, prod, topic, &consumer.Message{ID: "r1", Key: "key-1", Body: []byte("payload"), Headers: map[string]string{"x-app": "kept"}})

	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: tiers})
	var rec recorder
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		rec.add(m)
		if m.Attempt < 3 {
			return fmt.Errorf("attempt %d failed", m.Attempt)
		}
		return nil
	}), consumer.Config{Name: group, Retry: retry.Policy{MaxAttempts: 3, InitialInterval: 150 * time.Millisecond, Multiplier: 3, Jitter: retry.NoJitter}})
	adaptertest.WaitUntil(t, 20*time.Second, "the third attempt", func() bool { return rec.len() >= 3 })
	stop()

	got := rec.all()
	require.Len(t, got, 3)
	wantSource := []string{topic, RetryTopic(topic, group, 200*time.Millisecond), RetryTopic(topic, group, time.Second)}
	wantDelay := []time.Duration{0, 150 * time.Millisecond, 450 * time.Millisecond}
	for i, m := range got {
		require.Equal(t, i+1, m.Attempt, "attempt")
		require.Equal(t, "r1", m.ID)
		require.Equal(t, "key-1", m.Key)
		require.Equal(t, "payload", string(m.Body))
		require.Equal(t, "kept", m.Header("x-app"))
		require.Equal(t, wantSource[i], m.Source)
		if i == 0 {
			continue
		}
		require.GreaterOrEqual(t, rec.at[i].Sub(rec.at[i-1]), wantDelay[i], "attempt %d came early", i+1)
		require.Equal(t, strconv.Itoa(i+1), m.Header(consumer.HeaderAttempt))
		require.Equal(t, fmt.Sprintf("attempt %d failed", i), m.Header(consumer.HeaderError))
		require.Equal(t, topic, m.Header(consumer.HeaderOriginalSource))
		require.Equal(t, strconv.Itoa(int(got[0].Partition)), m.Header(consumer.HeaderOriginalPartition))
		require.Equal(t, strconv.FormatInt(got[0].Offset, 10), m.Header(consumer.HeaderOriginalOffset))
		require.Equal(t, group, m.Header(consumer.HeaderConsumer))
		nb := consumer.NotBeforeFromHeaders(m.Headers)
		require.False(t, nb.IsZero())
		require.False(t, rec.at[i].Before(nb), "handled before %s", consumer.HeaderRetryNotBefore)
	}
	require.Empty(t, readAll(t, addrs, DeadLetterTopic(topic, group), 0, 0))
}

// TestTiersAtStart: the retry tiers' topics are not fetched before the first
// poll returns (so a first fetch of only empty tier partitions cannot hold up
// the source topic's records), and are fetched without one, after
// tierStartDelay, when the source topic is empty: a record waiting in a tier
// at start is delivered either way.
func TestTiersAtStart(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("tierstart")
	group := topic
	tier := 200 * time.Millisecond
	tierTopic := RetryTopic(topic, group, tier)
	createTopic(t, addrs, tierTopic, 1) // an existing tier is consumed from the start
	created := time.Now()
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: retry.Tiers{tier}})
	t.Cleanup(func() { require.NoError(t, src.Close(context.Background())) })
	require.Equal(t, []string{tierTopic}, src.cl.PauseFetchTopics(), "paused topics at start")
	publish(t, client(t, addrs), tierTopic, &consumer.Message{ID: "w1", Key: "k", Body: []byte("waiting"), Headers: map[string]string{
		consumer.HeaderAttempt:        "2",
		consumer.HeaderRetryNotBefore: time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano),
	}})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := src.Receive(ctx, 10)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(created), tierStartDelay, "the tier was fetched before tierStartDelay with nothing polled")
	require.Len(t, ds, 1)
	m := ds[0].Message()
	require.Equal(t, "w1", m.ID)
	require.Equal(t, 2, m.Attempt)
	require.Equal(t, tierTopic, m.Source)
	require.NoError(t, ds[0].Ack(ctx))
	require.Empty(t, src.cl.PauseFetchTopics(), "tiers still paused")
}

// An always-failing record lands in the DLQ with the failure context.
func TestDeadLetterTopic(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("dlq")
	group := topic
	createTopic(t, addrs, topic, 1)
	prod := client(t, addrs)
	publish(t, prod, topic, &consumer.Message{ID: "d1", Key: "kd", Body: []byte("bad")})

	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: retry.Tiers{100 * time.Millisecond}})
	var rec recorder
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		rec.add(m)
		return errors.New("always broken")
	}), consumer.Config{Name: group, Retry: retry.Policy{MaxAttempts: 2, InitialInterval: 100 * time.Millisecond, Jitter: retry.NoJitter}})
	dl := readAll(t, addrs, DeadLetterTopic(topic, group), 1, 20*time.Second)
	stop()

	require.Len(t, dl, 1)
	first := rec.all()[0]
	m := dl[0]
	require.Equal(t, "d1", m.ID)
	require.Equal(t, "kd", m.Key)
	require.Equal(t, "bad", string(m.Body))
	require.Equal(t, consumer.ReasonExhausted, m.Header(consumer.HeaderDeadLetterReason))
	require.Equal(t, "always broken", m.Header(consumer.HeaderError))
	require.Equal(t, "2", m.Header(consumer.HeaderAttempt))
	require.Equal(t, topic, m.Header(consumer.HeaderOriginalSource))
	require.Equal(t, strconv.Itoa(int(first.Partition)), m.Header(consumer.HeaderOriginalPartition))
	require.Equal(t, strconv.FormatInt(first.Offset, 10), m.Header(consumer.HeaderOriginalOffset))
	require.NotEmpty(t, m.Header(consumer.HeaderOriginalTimestamp))
	require.NotEmpty(t, m.Header(consumer.HeaderFirstFailedAt))
	require.Equal(t, 2, rec.len())
}

// A consumer that dies without committing causes redelivery, and the
// idempotency store absorbs it: every effect happens once.
func TestCrashRedeliveryDeduped(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("crash")
	group := topic
	const n = 200
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("c-%03d", i), Key: fmt.Sprintf("k%d", i%7), Body: []byte("x")}
	}
	createTopic(t, addrs, topic, 3)
	publish(t, client(t, addrs), topic, msgs...)
	st, err := memory.New(memory.Config{})
	require.NoError(t, err)

	var mu sync.Mutex
	effects := map[string]int{}
	handled := 0
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		effects[m.ID]++
		handled++
		return nil
	})
	// First consumer: commits never happen (huge interval), then it crashes.
	first := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, CommitInterval: time.Hour})
	dups := &countObserver{}
	c1, err := consumer.New(first, h, consumer.Config{Name: group, Logger: testLogger()}, middleware.Idempotency(st))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c1.Run(context.Background()) }()
	adaptertest.WaitUntil(t, 20*time.Second, "the first consumer to handle everything", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled >= n
	})
	first.crash()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c1.Stop(ctx)
	<-done

	second := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group})
	stop := runConsumer(t, second, h, consumer.Config{Name: group, Observer: dups}, middleware.Idempotency(st))
	adaptertest.WaitUntil(t, 20*time.Second, "the redelivered records to be absorbed", func() bool { return dups.count(consumer.OutcomeDuplicate) >= n })
	stop()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, effects, n)
	for id, c := range effects {
		require.Equal(t, 1, c, id)
	}
	require.Equal(t, 0, dups.count(consumer.OutcomeProcessed))
}

type countObserver struct {
	mu sync.Mutex
	n  map[consumer.Outcome]int
}

func (o *countObserver) Settled(_ context.Context, ev consumer.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[consumer.Outcome]int{}
	}
	o.n[ev.Outcome]++
}
func (o *countObserver) BreakerChanged(bool) {}
func (o *countObserver) count(out consumer.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[out]
}

// Per-key order holds on one partition with 16 workers, while keys run in
// parallel.
func TestKeyOrderSinglePartition(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("order")
	group := topic
	const n, keys = 2000, 50
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("o-%04d", i), Key: fmt.Sprintf("key-%02d", i%keys), Body: []byte(strconv.Itoa(i / keys))}
	}
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1})
	publish(t, client(t, addrs), topic, msgs...)

	var mu sync.Mutex
	seqs := map[string][]int{}
	running, peak, handled := 0, 0, 0
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		seq, _ := strconv.Atoi(string(m.Body))
		mu.Lock()
		defer mu.Unlock()
		running--
		seqs[m.Key] = append(seqs[m.Key], seq)
		handled++
		require.Equal(t, int32(0), m.Partition)
		return nil
	}), consumer.Config{Name: group, Concurrency: 16})
	adaptertest.WaitUntil(t, 30*time.Second, "every record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled >= n
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, n, handled)
	for k, s := range seqs {
		require.True(t, slices.IsSorted(s), "key %s out of order: %v", k, s)
		require.Len(t, s, n/keys)
	}
	require.Greater(t, peak, 1, "keys ran in parallel")
}

// In-place retry keeps the failing record's key order: nothing of its key
// overtakes it, and no copy is produced.
func TestRetryInPlaceOrder(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("inplace")
	group := topic
	const n = 30
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("p-%02d", i), Key: fmt.Sprintf("k%d", i%3), Body: []byte(strconv.Itoa(i))}
	}
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, RetryMode: RetryInPlace})
	publish(t, client(t, addrs), topic, msgs...)
	var mu sync.Mutex
	order := map[string][]int{}
	attempts := map[string][]int{}
	var failedAt time.Time
	var retriedAt time.Time
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[m.ID] = append(attempts[m.ID], m.Attempt)
		if m.ID == "p-04" && m.Attempt < 3 {
			failedAt = time.Now()
			return errors.New("not yet")
		}
		if m.ID == "p-04" {
			retriedAt = time.Now()
		}
		i, _ := strconv.Atoi(string(m.Body))
		order[m.Key] = append(order[m.Key], i)
		return nil
	}), consumer.Config{Name: group, Concurrency: 8, Retry: retry.Policy{MaxAttempts: 3, InitialInterval: 200 * time.Millisecond, Multiplier: 1, Jitter: retry.NoJitter}})
	adaptertest.WaitUntil(t, 20*time.Second, "every record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		c := 0
		for _, o := range order {
			c += len(o)
		}
		return c >= n
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 2, 3}, attempts["p-04"])
	require.GreaterOrEqual(t, retriedAt.Sub(failedAt), 200*time.Millisecond)
	for k, o := range order {
		require.True(t, slices.IsSorted(o), "key %s: %v", k, o)
		require.Len(t, o, n/3)
	}
	for _, tier := range defaultTierTopics(topic, group) {
		require.Empty(t, readAll(t, addrs, tier, 0, 0))
	}
}

// defaultTierTopics lists the retry topics of the default tiers.
func defaultTierTopics(topic, group string) []string {
	var out []string
	for _, d := range retry.DefaultTiers {
		out = append(out, RetryTopic(topic, group, d))
	}
	return out
}

// A partition paused by this member is fetched again after it was revoked
// and assigned back: pause state must not survive the rebalance.
func TestPauseClearedOnRevoke(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("pause")
	group := topic
	a := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 2, RetryMode: RetryInPlace})
	defer a.Close(context.Background())
	prod := client(t, addrs)
	// Pause both partitions as backpressure would.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	publish(t, prod, topic, &consumer.Message{ID: "warm", Key: "w", Body: []byte("w")})
	ds, err := a.Receive(ctx, 10)
	require.NoError(t, err)
	for _, d := range ds {
		require.NoError(t, d.Ack(ctx))
	}
	a.mu.Lock()
	require.Len(t, a.parts, 2)
	for _, p := range a.parts {
		p.pausedFull = true
		a.pauseLocked(p)
	}
	a.mu.Unlock()
	require.Len(t, a.cl.PauseFetchPartitions(nil)[topic], 2)

	// A second member takes one partition, then leaves.
	b := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 2, RetryMode: RetryInPlace})
	// a must poll so the rebalance can proceed (blocked rebalances).
	pollCtx, pollCancel := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			ds, _ := a.Receive(pollCtx, 10)
			for _, d := range ds {
				_ = d.Ack(ctx)
			}
		}
	}()
	adaptertest.WaitUntil(t, 20*time.Second, "b to own a partition", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.parts) == 1
	})
	adaptertest.WaitUntil(t, 20*time.Second, "a to lose one partition and its pause", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.parts) == 1 && len(a.cl.PauseFetchPartitions(nil)[topic]) == 1
	})
	require.NoError(t, b.Close(ctx))
	adaptertest.WaitUntil(t, 20*time.Second, "a to get the partition back", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.parts) == 2
	})
	pollCancel()
	<-polled
	// The partition that came back is not paused and delivers new records.
	var back int32 = -1
	a.mu.Lock()
	for k, p := range a.parts {
		if !p.pausedFull {
			back = k.partition
		}
	}
	a.mu.Unlock()
	require.NotEqual(t, int32(-1), back)
	require.NotContains(t, a.cl.PauseFetchPartitions(nil)[topic], back)
	rec := &kgo.Record{Topic: topic, Partition: back, Value: []byte("after"), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte("after")}}}
	pcl := client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, pcl.ProduceSync(ctx, rec).FirstErr())
	got := []string{}
	for !slices.Contains(got, "after") {
		ds, err := a.Receive(ctx, 10)
		require.NoError(t, err)
		for _, d := range ds {
			got = append(got, d.Message().ID)
			require.NoError(t, d.Ack(ctx))
		}
	}
}

// Backlog reports lag per partition and the DLQ depth.
func TestBacklog(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("lag")
	group := topic
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, Tiers: retry.Tiers{time.Second}})
	defer s.Close(context.Background())
	prod := client(t, addrs)
	msgs := make([]*consumer.Message, 10)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: strconv.Itoa(i), Body: []byte("b")}
	}
	publish(t, prod, topic, msgs...)
	publish(t, prod, DeadLetterTopic(topic, group), msgs[:3]...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bl, err := s.Backlog(ctx)
	require.NoError(t, err)
	require.Equal(t, []consumer.Backlog{
		{Source: topic, Partition: 0, Lag: 10, DeadLetters: -1, NeverCommitted: true},
		{Source: RetryTopic(topic, group, time.Second), Partition: 0, Lag: 0, DeadLetters: -1, NeverCommitted: true},
		{Source: topic, Partition: -1, Lag: 0, DeadLetters: 3},
	}, bl)
	got := ReceiveAck(t, s, 4)
	require.Len(t, got, 4)
	require.NoError(t, s.commitOwned(ctx, false))
	bl, err = s.Backlog(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(6), bl[0].Lag)
	require.False(t, bl[0].NeverCommitted, "the group committed on the source partition")
}

// ReceiveAck receives and acks n deliveries.
func ReceiveAck(t testing.TB, s *Source, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ids []string
	for len(ids) < n {
		ds, err := s.Receive(ctx, n-len(ids))
		require.NoError(t, err)
		for _, d := range ds {
			ids = append(ids, d.Message().ID)
			require.NoError(t, d.Ack(ctx))
		}
	}
	return ids
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := New(ctx, Config{})
	require.Error(t, err)
	for _, want := range []string{"missing Brokers", "missing Topic", "missing Group"} {
		require.ErrorContains(t, err, want)
	}
	base := Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Group: "g"}
	bad := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"unbounded poll", func(c *Config) { c.MaxPollRecords = -1 }, "MaxPollRecords"},
		{"unbounded in-flight", func(c *Config) { c.MaxPartitionInFlight = -1 }, "unbounded in-flight"},
		{"in-flight below poll", func(c *Config) { c.MaxPollRecords = 100; c.MaxPartitionInFlight = 10 }, "MaxPartitionInFlight (10) must be >= MaxPollRecords (100)"},
		{"tier beyond claims", func(c *Config) { c.ClaimRetention = 30 * time.Minute }, "outlive its idempotency claim"},
		{"bad tiers", func(c *Config) { c.Tiers = retry.Tiers{time.Minute, time.Second} }, "strictly increasing"},
		{"revoke too long", func(c *Config) { c.RevokeTimeout = 2 * time.Minute }, "RevokeTimeout"},
		{"retry topic as source", func(c *Config) { c.Topic = "t.g.retry.1s" }, "retry or dead-letter topic"},
		{"no ID", func(c *Config) { c.IDHeaders = []string{} }, "no record could have an ID"},
		{"negative min.insync.replicas", func(c *Config) { c.MinInsyncReplicas = -1 }, "MinInsyncReplicas must be > 0"},
		{"min.insync.replicas above replication", func(c *Config) { c.ReplicationFactor = 2; c.MinInsyncReplicas = 3 }, "MinInsyncReplicas (3) is above ReplicationFactor (2)"},
	}
	for _, tc := range bad {
		c := base
		tc.mut(&c)
		_, err := New(ctx, c)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestRefusedOpts(t *testing.T) {
	t.Parallel()
	addrs := newCluster(t, 1) // option checks only: no broker behaviour involved
	_, err := New(context.Background(), Config{Brokers: addrs, Topic: uniqueTopic("opts"), Group: "g", Logger: testLogger(),
		Opts: []kgo.Opt{kgo.AutoCommitMarks(), kgo.ConsumeRegex(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}})
	require.ErrorContains(t, err, "AutoCommitMarks")
	require.ErrorContains(t, err, "ConsumeRegex")
	require.ErrorContains(t, err, "RequiredAcks")
}

func TestTopicCreationRefused(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("skip")
	_, err := New(context.Background(), Config{Brokers: addrs, Topic: topic, Group: "g", SkipTopicCreation: true, Logger: testLogger()})
	require.ErrorIs(t, err, ErrTopicCreation)
	require.ErrorContains(t, err, DeadLetterTopic(topic, "g"))
	// A replication factor the cluster cannot honour is refused by the broker.
	_, err = New(context.Background(), Config{Brokers: addrs, Topic: topic, Group: "g", ReplicationFactor: 3, Logger: testLogger()})
	require.ErrorIs(t, err, ErrTopicCreation)
	require.True(t, strings.Contains(err.Error(), "refused"), err.Error())
}

// A partition with MaxPartitionInFlight records outstanding is paused and
// hands out nothing more; settling half resumes it, and every record still
// arrives exactly once, in order.
func TestPartitionInFlightBound(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("bound")
	group := topic
	const n = 100
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, MaxPollRecords: 10, MaxPartitionInFlight: 20})
	defer s.Close(context.Background())
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: strconv.Itoa(i), Key: "k", Body: []byte("b")}
	}
	publish(t, client(t, addrs), topic, msgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var held []consumer.Delivery
	for len(held) < 20 {
		ds, err := s.Receive(ctx, 100)
		require.NoError(t, err)
		held = append(held, ds...)
	}
	require.Len(t, held, 20)
	require.Equal(t, []int32{0}, s.cl.PauseFetchPartitions(nil)[topic], "paused at the bound")
	quiet, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	ds, err := s.Receive(quiet, 100)
	qcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, ds)

	var ids []int
	for _, d := range held[:10] {
		id, _ := strconv.Atoi(d.Message().ID)
		ids = append(ids, id)
		require.NoError(t, d.Ack(ctx))
	}
	require.Empty(t, s.cl.PauseFetchPartitions(nil)[topic], "resumed at half the bound")
	for _, d := range held[10:] {
		id, _ := strconv.Atoi(d.Message().ID)
		ids = append(ids, id)
		require.NoError(t, d.Ack(ctx))
	}
	for len(ids) < n {
		ds, err := s.Receive(ctx, 100)
		require.NoError(t, err)
		for _, d := range ds {
			id, _ := strconv.Atoi(d.Message().ID)
			ids = append(ids, id)
			require.NoError(t, d.Ack(ctx))
		}
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, ids)
}

// Records produced by kcat (librdkafka) arrive with ID, key and headers
// intact. The test script installs kcat from Debian's packages; without it
// the test skips locally and fails under CI.
func TestKcatProducedRecords(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		envtest.Missing(t, "kcat", err)
		return
	}
	addrs := brokers(t)
	topic := uniqueTopic("kcat")
	group := topic
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group})
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, kcat, "-P", "-b", strings.Join(addrs, ","), "-t", topic,
			"-k", fmt.Sprintf("key-%d", i), "-H", fmt.Sprintf("message-id=kc-%d", i), "-H", "x-origin=kcat", "-H", "x-n="+strconv.Itoa(i))
		cmd.Stdin = strings.NewReader(fmt.Sprintf("value-%d", i))
		out, err := cmd.CombinedOutput()
		cancel()
		require.NoError(t, err, "kcat: %s", out)
	}
	var rec recorder
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		rec.add(m)
		return nil
	}), consumer.Config{Name: group})
	adaptertest.WaitUntil(t, 30*time.Second, "three records", func() bool { return rec.len() >= 3 })
	stop()
	got := rec.all()
	slices.SortFunc(got, func(a, b *consumer.Message) int { return strings.Compare(a.ID, b.ID) })
	require.Len(t, got, 3)
	for i, m := range got {
		require.Equal(t, fmt.Sprintf("kc-%d", i), m.ID)
		require.Equal(t, fmt.Sprintf("key-%d", i), m.Key)
		require.Equal(t, fmt.Sprintf("value-%d", i), string(m.Body))
		require.Equal(t, map[string]string{"message-id": m.ID, "x-origin": "kcat", "x-n": strconv.Itoa(i)}, m.Headers)
	}
}

// Client publishes as the Source reads, reports backlog without joining
// the group, and lists dead letters without consuming them.
func TestClient(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("client")
	group := topic
	c, err := NewClient(addrs)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 2, Tiers: retry.Tiers{100 * time.Millisecond}})
	require.NoError(t, c.Publish(ctx, topic,
		&consumer.Message{ID: "a", Key: "k1", Body: []byte("1"), Headers: map[string]string{"x": "y"}},
		&consumer.Message{ID: "b", Key: "k2", Body: []byte("2")},
		&consumer.Message{ID: "c", Key: "k3", Body: []byte("3")}))

	bl, err := c.Backlog(ctx, topic, group)
	require.NoError(t, err)
	require.Equal(t, int64(3), topicLag(bl, topic))
	require.True(t, slices.ContainsFunc(bl, func(b consumer.Backlog) bool { return b.Source == RetryTopic(topic, group, 100*time.Millisecond) }), "retry topic listed: %v", bl)

	// A group that never joined nor committed has every record as lag.
	never, err := c.Backlog(ctx, topic, "never-joined")
	require.NoError(t, err)
	require.Equal(t, int64(3), topicLag(never, topic))

	ds := make(map[string]consumer.Delivery)
	for len(ds) < 3 {
		got, err := s.Receive(ctx, 10)
		require.NoError(t, err)
		for _, d := range got {
			ds[d.Message().ID] = d
		}
	}
	require.Equal(t, "y", ds["a"].Message().Header("x"))
	for _, id := range []string{"a", "b"} {
		m := ds[id].Message()
		require.NoError(t, ds[id].DeadLetter(ctx, consumer.FailureHeaders(m, consumer.Failure{Consumer: "cl", Reason: consumer.ReasonPermanent, Err: errors.New("bad"), NextAttempt: 1})))
	}
	require.NoError(t, ds["c"].Ack(ctx))
	require.NoError(t, s.Close(ctx))

	dl := readDeadLetters(t, c, topic, group, nil)
	require.Len(t, dl, 2)
	ids := []string{dl[0].ID, dl[1].ID}
	slices.Sort(ids)
	require.Equal(t, []string{"a", "b"}, ids)
	for _, m := range dl {
		require.Equal(t, consumer.ReasonPermanent, m.Header(consumer.HeaderDeadLetterReason))
		require.Equal(t, DeadLetterTopic(topic, group), m.Source)
	}
	require.Len(t, readDeadLetters(t, c, topic, group, nil), 2, "reading does not consume")

	bl, err = c.Backlog(ctx, topic, group)
	require.NoError(t, err)
	require.Equal(t, int64(0), topicLag(bl, topic))
	require.Equal(t, consumer.Backlog{Source: topic, Partition: -1, DeadLetters: 2}, bl[len(bl)-1])
}

// A dead-letter record a redrive or purge removed is never listed or
// counted again, also when a record before it in its partition stays: the
// bug this catches is recording removals only as a committed offset, which
// cannot skip a record and so kept listing (and redriving) the later ones.
func TestDeadLetterRemoval(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("dlremove")
	group := topic
	c, err := NewClient(addrs)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1})
	ids := []string{"a", "b", "c", "d"}
	for _, id := range ids {
		require.NoError(t, c.Publish(ctx, topic, &consumer.Message{ID: id, Body: []byte(id)}))
	}
	for n := 0; n < len(ids); {
		got, err := s.Receive(ctx, 10)
		require.NoError(t, err)
		for _, d := range got {
			m := d.Message()
			require.NoError(t, d.DeadLetter(ctx, consumer.FailureHeaders(m, consumer.Failure{Consumer: group, Reason: consumer.ReasonPermanent, Err: errors.New("bad"), NextAttempt: 1})))
			n++
		}
	}
	require.NoError(t, s.Close(ctx))
	depth := func() int64 {
		bl, err := c.Backlog(ctx, topic, group)
		require.NoError(t, err)
		return bl[len(bl)-1].DeadLetters
	}
	listed := func(remove ...string) []string {
		var out []string
		for _, m := range readDeadLetters(t, c, topic, group, remove) {
			out = append(out, m.ID)
		}
		return out
	}
	require.Equal(t, ids, listed())
	require.Equal(t, int64(4), depth())

	require.Equal(t, ids, listed("b", "d"), "the reader that removes still lists everything")
	require.Equal(t, []string{"a", "c"}, listed(), "b and d are removed although a stays before them")
	require.Equal(t, int64(2), depth())

	require.Equal(t, []string{"a", "c"}, listed("a"))
	require.Equal(t, []string{"c"}, listed(), "removing a moves the position past b")
	require.Equal(t, int64(1), depth())

	listed("c")
	require.Empty(t, listed())
	require.Equal(t, int64(0), depth())
}

// The removal record survives the commit metadata's size limit: ranges
// keep it short, and past the limit the highest offsets are left out
// (listed again) rather than the commit failing.
func TestRemovalsMetadata(t *testing.T) {
	r := parseRemovals(3, "")
	for _, o := range []int64{1, 5, 6, 7, 9, 12, 13} {
		r.add(o)
	}
	require.Equal(t, int64(3), r.at)
	require.Equal(t, "oncely-removed:5-7,9,12-13", r.metadata())
	require.Equal(t, r, parseRemovals(3, r.metadata()))
	require.Equal(t, int64(4), r.left(0, 11), "3, 4, 8, 10")
	r.add(3)
	r.add(4)
	require.Equal(t, int64(8), r.at)
	require.Equal(t, "oncely-removed:9,12-13", r.metadata())
	require.Equal(t, removals{at: 2, past: map[int64]bool{}}, parseRemovals(2, "someone else's metadata"))

	big := parseRemovals(0, "")
	for o := int64(1); o < 20000; o += 2 {
		big.add(o)
	}
	md := big.metadata()
	require.LessOrEqual(t, len(md), removedMetadataMax)
	kept := parseRemovals(0, md)
	require.Greater(t, len(kept.past), 500)
	for o := range kept.past {
		require.True(t, big.past[o])
	}

	// A redrive of 10,000 of 12,000 dead letters, the 2,000 others spread
	// through them: 8 KB of ranges, kept whole as a bitmap.
	scattered := parseRemovals(0, "")
	for o := int64(0); o < 12000; o++ {
		if o%6 != 0 {
			scattered.add(o)
		}
	}
	md = scattered.metadata()
	require.True(t, strings.HasPrefix(md, removedBitsPrefix), md[:40])
	require.LessOrEqual(t, len(md), removedMetadataMax)
	require.Equal(t, scattered, parseRemovals(scattered.at, md))
	require.Equal(t, int64(2000), scattered.left(0, 12000))
	require.Equal(t, removals{at: 7, past: map[int64]bool{}}, parseRemovals(7, removedBitsPrefix+"!!"), "a bitmap that does not decode holds no removals")
}

// readDeadLetters lists the dead letters of topic and group with one
// reader, removing those whose ID is in remove.
func readDeadLetters(t *testing.T, c *Client, topic, group string, remove []string) []*consumer.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.ReadDeadLetters(ctx, topic, group)
	require.NoError(t, err)
	var out []*consumer.Message
	for {
		ms, err := r.Next(ctx, 100)
		require.NoError(t, err)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			if slices.Contains(remove, m.ID) {
				r.Remove(m)
			}
		}
		out = append(out, ms...)
	}
	require.Equal(t, len(out), r.Total())
	require.NoError(t, r.Close(ctx))
	return out
}

// topicLag sums the lag of topic's partitions in bl.
func topicLag(bl []consumer.Backlog, topic string) int64 {
	var lag int64
	for _, b := range bl {
		if b.Partition >= 0 && b.Source == topic {
			lag += b.Lag
		}
	}
	return lag
}

// Losing a partition drops its deliveries at once: Lost is closed, their
// settlements change nothing, no commit is sent for it, and its pause is
// cleared.
func TestLostPartition(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("lost")
	group := topic
	s := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, CommitInterval: time.Hour})
	defer s.Close(context.Background())
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "1", Body: []byte("a")}, &consumer.Message{ID: "2", Body: []byte("b")})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ds []consumer.Delivery
	for len(ds) < 2 {
		got, err := s.Receive(ctx, 10)
		require.NoError(t, err)
		ds = append(ds, got...)
	}
	s.mu.Lock()
	p := s.parts[tp{topic, 0}]
	p.pausedFull = true
	s.pauseLocked(p)
	s.mu.Unlock()

	s.onLost(ctx, s.cl, map[string][]int32{topic: {0}})
	for _, d := range ds {
		select {
		case <-d.(consumer.Leased).Lost():
		default:
			t.Fatalf("delivery %s not marked lost", d.Message().ID)
		}
		require.NoError(t, d.Ack(ctx), "settling a lost delivery is a no-op, not an error")
	}
	require.Empty(t, s.cl.PauseFetchPartitions(nil)[topic])
	require.NoError(t, s.commitOwned(ctx, false))
	offsets, err := kadmClient(t, addrs).FetchOffsets(ctx, group)
	require.NoError(t, err)
	_, committed := offsets.Lookup(topic, 0)
	require.False(t, committed, "nothing committed for a lost partition")
}

func TestExpectedCommitErrors(t *testing.T) {
	t.Parallel()
	for _, err := range []error{kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RebalanceInProgress, fmt.Errorf("wrapped: %w", kerr.IllegalGeneration)} {
		require.True(t, expectedCommitError(err), "%v", err)
	}
	for _, err := range []error{nil, kerr.CoordinatorNotAvailable, errors.New("other")} {
		require.False(t, expectedCommitError(err), "%v", err)
	}
}

func kadmClient(t testing.TB, addrs []string) *kadm.Client {
	return kadm.NewClient(client(t, addrs))
}

// A Client that looked a group up before its Source started finds it right
// after: the lookup asks the brokers, not the client's metadata cache,
// which would still hold the topic list without the new dead-letter topic
// for up to MetadataMinAge (5 s). The bug it catches: `oncely dlq`, `lag`
// or the console calling a consumer that has just started missing.
func TestHasGroupRightAfterTheSourceStarted(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("lookup")
	group := topic
	createTopic(t, addrs, topic, 1)
	c, err := NewClient(addrs)
	require.NoError(t, err)
	defer c.Close()
	ok, err := c.HasGroup(t.Context(), topic, group)
	require.NoError(t, err)
	require.False(t, ok, "before the Source started")
	groups, err := c.Groups(t.Context(), topic)
	require.NoError(t, err)
	require.NotContains(t, groups, group)

	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group})
	defer func() { require.NoError(t, src.Close(context.Background())) }()
	ok, err = c.HasGroup(t.Context(), topic, group)
	require.NoError(t, err)
	require.True(t, ok, "right after the Source started")
	groups, err = c.Groups(t.Context(), topic)
	require.NoError(t, err)
	require.Contains(t, groups, group)
}
