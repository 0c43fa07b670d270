package kafka

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// trimObserver records the settlement events.
type trimObserver struct {
	mu  sync.Mutex
	evs []consumer.Event
}

func (o *trimObserver) Settled(_ context.Context, ev consumer.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, ev)
}
func (o *trimObserver) BreakerChanged(bool) {}
func (o *trimObserver) events() []consumer.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]consumer.Event(nil), o.evs...)
}

// Through the runtime: a record near the topic's limit whose retry copy
// cannot fit is dead-lettered at once as retry-refused, its dead letter
// without the body but with the failure context and the body's size and
// hash; the settlement reports the trimmed copy, the original is committed,
// nothing loops.
func TestRuntimeCopyTooLarge(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("toolarge")
	group := topic // unique: a real broker keeps groups across runs
	const tier = 200 * time.Millisecond
	tierTopic, dlq := RetryTopic(topic, group, tier), DeadLetterTopic(topic, group)
	createTopics(t, addrs, 0, topic)
	createTopics(t, addrs, 20000, tierTopic, dlq)
	body := noise(19800)
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "big", Key: "k", Body: body})

	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, Tiers: retry.Tiers{tier}})
	var obs trimObserver
	var mu sync.Mutex
	handled := 0
	stop := runConsumer(t, src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		mu.Lock()
		handled++
		mu.Unlock()
		return errors.New("handler failed")
	}), consumer.Config{Name: group, Observer: &obs, Retry: retry.Policy{MaxAttempts: 5, InitialInterval: tier, Jitter: retry.NoJitter}})
	dl := readAll(t, addrs, dlq, 1, 20*time.Second)
	adaptertest.WaitUntil(t, 10*time.Second, "the settlement event", func() bool { return len(obs.events()) >= 1 })
	time.Sleep(time.Second) // an observation window: nothing more happens
	stop()

	require.Len(t, dl, 1)
	m := dl[0]
	require.Equal(t, "big", m.ID)
	require.Empty(t, m.Body)
	require.Equal(t, "19800", m.Header(consumer.HeaderBodyRemovedSize))
	require.Equal(t, sha(body), m.Header(consumer.HeaderBodyRemovedSHA256))
	require.Equal(t, consumer.ReasonRetryRefused, m.Header(consumer.HeaderDeadLetterReason))
	require.Contains(t, m.Header(consumer.HeaderError), "handler failed")
	require.Contains(t, m.Header(consumer.HeaderError), "retry copy refused")
	require.Equal(t, topic, m.Header(consumer.HeaderOriginalSource))
	mu.Lock()
	require.Equal(t, 1, handled, "handled once: the refused retry went to the DLQ")
	mu.Unlock()
	evs := obs.events()
	require.Len(t, evs, 1)
	require.Equal(t, consumer.OutcomeDeadLettered, evs[0].Outcome)
	require.True(t, evs[0].Trimmed)
	require.Empty(t, readAll(t, addrs, tierTopic, 0, 0), "no retry copy")
	offs, err := kadmClient(t, addrs).FetchOffsets(context.Background(), group)
	require.NoError(t, err)
	o, ok := offs.Lookup(topic, 0)
	require.True(t, ok)
	require.Equal(t, int64(1), o.At, "the original is committed")
}

// Through the runtime: a retry copy the broker fails while it answers (the
// probe succeeds) counts as an attempt of the message; when attempts run
// out the message is dead-lettered as retry-refused with its body, and
// nothing is stored in the tier.
func TestRuntimeRetryCopyFailsBrokerUp(t *testing.T) {
	t.Parallel()
	c := newFake(t)
	faults := faultProduce(t, c)
	addrs := c.ListenAddrs()
	topic := uniqueTopic("copyup")
	const tier = 100 * time.Millisecond
	tierTopic, dlq := RetryTopic(topic, "cu", tier), DeadLetterTopic(topic, "cu")
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: "cu", TopicPartitions: 1, Tiers: retry.Tiers{tier}})
	faults.fail(t, tierTopic)
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "m", Key: "k", Body: []byte("body")})
	var mu sync.Mutex
	handled := 0
	stop := runConsumer(t, src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		mu.Lock()
		handled++
		mu.Unlock()
		return errors.New("handler failed")
	}), consumer.Config{Name: "cu", Retry: retry.Policy{MaxAttempts: 3, InitialInterval: tier, Jitter: retry.NoJitter}})
	dl := readAll(t, addrs, dlq, 1, 20*time.Second)
	stop()
	require.Len(t, dl, 1)
	require.Equal(t, "m", dl[0].ID)
	require.Equal(t, "body", string(dl[0].Body))
	require.Equal(t, consumer.ReasonRetryRefused, dl[0].Header(consumer.HeaderDeadLetterReason))
	require.Contains(t, dl[0].Header(consumer.HeaderError), "INVALID_RECORD")
	require.GreaterOrEqual(t, faults.failed.Load(), int64(2), "the retry copy was tried per attempt left")
	mu.Lock()
	require.Equal(t, 1, handled)
	mu.Unlock()
	faults.heal()
	require.Empty(t, readAll(t, addrs, tierTopic, 0, 0), "no retry copy stored")
}

// Through the runtime: while the brokers do not answer for the copy topics
// (produce fails and the probe reports no leader), a failed retry copy is an
// outage: the delivery is held, the breaker opens, nothing is dead-lettered;
// once they answer again the copy is produced and the retry handled.
func TestRuntimeRetryCopyFailsBrokerDown(t *testing.T) {
	t.Parallel()
	c := newFake(t)
	faults := faultProduce(t, c)
	addrs := c.ListenAddrs()
	topic := uniqueTopic("copydown")
	const tier = 100 * time.Millisecond
	tierTopic, dlq := RetryTopic(topic, "cd", tier), DeadLetterTopic(topic, "cd")
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: "cd", TopicPartitions: 1, Tiers: retry.Tiers{tier}})
	var down atomic.Bool
	down.Store(true)
	leaderless(c, dlq, &down)
	faults.fail(t, tierTopic)
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "m", Key: "k", Body: []byte("body")})
	var rec recorder
	var obs breakerObserver
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		rec.add(m)
		if m.Attempt == 1 {
			return errors.New("handler failed")
		}
		return nil
	}), consumer.Config{Name: "cd", Observer: &obs, BreakerThreshold: 1, OutageBackoff: retry.Policy{InitialInterval: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond, Jitter: retry.NoJitter},
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: tier, Jitter: retry.NoJitter}})
	adaptertest.WaitUntil(t, 10*time.Second, "the breaker to open", func() bool { return obs.opened.Load() })
	adaptertest.WaitUntil(t, 10*time.Second, "more refused copies", func() bool { return faults.failed.Load() >= 3 })
	require.Equal(t, 1, rec.len())

	down.Store(false)
	faults.heal()
	adaptertest.WaitUntil(t, 20*time.Second, "the retry after the outage", func() bool { return rec.len() >= 2 })
	stop()
	got := rec.all()
	require.Len(t, got, 2)
	require.Equal(t, 2, got[1].Attempt)
	require.Equal(t, tierTopic, got[1].Source)
	require.Empty(t, readAll(t, addrs, dlq, 0, 0), "the outage dead-lettered the message")
}

// breakerObserver records whether the breaker opened.
type breakerObserver struct {
	opened atomic.Bool
}

func (o *breakerObserver) Settled(context.Context, consumer.Event) {}
func (o *breakerObserver) BreakerChanged(open bool) {
	if open {
		o.opened.Store(true)
	}
}
