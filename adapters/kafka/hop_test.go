package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// receiveN receives until it holds n deliveries, unsettled, failing t after
// timeout.
func receiveN(t testing.TB, s *Source, n int, timeout time.Duration) []consumer.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []consumer.Delivery
	for len(out) < n {
		ds, err := s.Receive(ctx, n-len(out))
		require.NoError(t, err, "received %d of %d", len(out), n)
		out = append(out, ds...)
	}
	return out
}

// receiveFor receives everything delivered within d.
func receiveFor(t testing.TB, s *Source, d time.Duration) []consumer.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []consumer.Delivery
	for {
		ds, err := s.Receive(ctx, 100)
		out = append(out, ds...)
		if errors.Is(err, context.DeadlineExceeded) {
			return out
		}
		require.NoError(t, err)
	}
}

// byID maps deliveries by message ID, failing t on a repeat.
func byID(t testing.TB, ds []consumer.Delivery) map[string]consumer.Delivery {
	t.Helper()
	m := make(map[string]consumer.Delivery, len(ds))
	for _, d := range ds {
		id := d.Message().ID
		require.NotContains(t, m, id, "delivered twice")
		m[id] = d
	}
	return m
}

// A retry far in the future does not hold back a short one behind it in
// the same tier partition: the short one is delivered when due, and the far
// one hops (is re-published to its tier, its offset then committed) and
// stays pending, neither delivered nor dead-lettered.
func TestFarRetryDoesNotBlockTier(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("hop")
	group := topic // unique: a real broker keeps groups across runs
	const tier = time.Second
	tierTopic := RetryTopic(topic, group, tier)
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, Tiers: retry.Tiers{tier}})
	closed := false
	defer func() {
		if !closed {
			require.NoError(t, src.Close(context.Background()))
		}
	}()
	publish(t, client(t, addrs), topic,
		&consumer.Message{ID: "far", Key: "k", Body: []byte("far body")},
		&consumer.Message{ID: "near", Key: "k", Body: []byte("near body")})
	ds := byID(t, receiveN(t, src, 2, 20*time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, ds["far"].Retry(ctx, 13*time.Hour, map[string]string{consumer.HeaderAttempt: "2", "x-which": "far"}))
	require.NoError(t, ds["near"].Retry(ctx, tier, map[string]string{consumer.HeaderAttempt: "2", "x-which": "near"}))
	retried := time.Now()

	// The near retry comes when due: a tier's delay after its copy, plus
	// the far copy's hop and fetch latency, never 13 h.
	got := receiveN(t, src, 1, tier+4*time.Second)
	late := time.Since(retried)
	m := got[0].Message()
	require.Equal(t, "near", m.ID)
	require.Equal(t, tierTopic, m.Source)
	require.Equal(t, 2, m.Attempt)
	require.Equal(t, "near body", string(m.Body))
	require.False(t, time.Now().Before(consumer.NotBeforeFromHeaders(m.Headers)), "delivered early")
	t.Logf("near retry delivered %s after its copy was produced (tier %s)", late, tier)
	require.NoError(t, got[0].Ack(ctx))

	// The far one keeps hopping, and is never delivered meanwhile.
	require.Empty(t, receiveFor(t, src, 2500*time.Millisecond), "nothing else is due")
	require.NoError(t, src.Close(context.Background()))
	closed = true

	copies := readAll(t, addrs, tierTopic, 3, 10*time.Second)
	var far []*consumer.Message
	for _, c := range copies {
		if c.ID == "far" {
			far = append(far, c)
		}
	}
	require.GreaterOrEqual(t, len(far), 3, "the far copy hopped at least twice in 3.5 s of a 1 s tier")
	for _, c := range far {
		require.Equal(t, "far body", string(c.Body))
		require.Equal(t, "far", c.Header("x-which"))
		require.Equal(t, "2", c.Header(consumer.HeaderAttempt))
		require.Equal(t, far[0].Header(consumer.HeaderRetryNotBefore), c.Header(consumer.HeaderRetryNotBefore), "a hop keeps the due time")
	}
	require.Empty(t, readAll(t, addrs, DeadLetterTopic(topic, group), 0, 0), "nothing dead-lettered")

	// Still pending: the last far copy lies at or after the group's
	// committed offset of the tier partition, so the group reads it again.
	adm := kadmClient(t, addrs)
	offs, err := adm.FetchOffsets(ctx, group)
	require.NoError(t, err)
	c, ok := offs.Lookup(tierTopic, 0)
	require.True(t, ok, "tier partition committed")
	last := far[len(far)-1]
	require.GreaterOrEqual(t, last.Offset, c.At, "the pending far copy is not behind the commit")
	require.Greater(t, c.At, far[0].Offset, "the first far copy, hopped, was committed past")
}

func TestHopTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		ts    time.Time
		delay time.Duration
		want  time.Time
	}{
		{"fresh record: a tier's delay after it was produced", now.Add(-100 * time.Millisecond), time.Hour, now.Add(time.Hour - 100*time.Millisecond)},
		{"old record: after the floor", now.Add(-2 * time.Hour), time.Hour, now.Add(hopFloor)},
		{"short tier: its delay is the floor", now.Add(-time.Second), 200 * time.Millisecond, now.Add(200 * time.Millisecond)},
		{"timestamp ahead of the clock: from now", now.Add(time.Hour), time.Minute, now.Add(time.Minute)},
		{"no timestamp: from now", time.Time{}, time.Minute, now.Add(time.Minute)},
	} {
		require.Equal(t, c.want, hopTime(c.ts, now, c.delay), c.name)
	}
}

// A hop the broker refuses does not hold back the records behind it, and
// the hopping record's offset is not committed until a hop succeeds: the
// record is never lost.
func TestFailedHopKeepsRecord(t *testing.T) {
	t.Parallel()
	c := newFake(t)
	faults := faultProduce(t, c)
	addrs := c.ListenAddrs()
	topic := uniqueTopic("hopfail")
	const tier = time.Second
	tierTopic := RetryTopic(topic, "hf", tier)
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: "hf", TopicPartitions: 1, Tiers: retry.Tiers{tier}})
	defer src.Close(context.Background())
	publish(t, client(t, addrs), topic,
		&consumer.Message{ID: "far", Key: "k", Body: []byte("far body")},
		&consumer.Message{ID: "near", Key: "k", Body: []byte("near body")})
	ds := byID(t, receiveN(t, src, 2, 20*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, ds["far"].Retry(ctx, 13*time.Hour, map[string]string{consumer.HeaderAttempt: "2"}))
	require.NoError(t, ds["near"].Retry(ctx, tier, map[string]string{consumer.HeaderAttempt: "2"}))
	faults.fail(t, tierTopic) // every hop fails from now on

	near := receiveN(t, src, 1, tier+4*time.Second)[0]
	require.Equal(t, "near", near.Message().ID, "the failing hop does not hold the near retry back")
	require.NoError(t, near.Ack(ctx))
	adaptertest.WaitUntil(t, 10*time.Second, "a refused hop", func() bool { return faults.failed.Load() >= 1 })
	require.NoError(t, src.commitOwned(ctx, false))
	offs, err := kadmClient(t, addrs).FetchOffsets(ctx, "hf")
	require.NoError(t, err)
	committed, ok := offs.Lookup(tierTopic, 0)
	if ok {
		require.LessOrEqual(t, committed.At, int64(0), "the far copy (offset 0) was committed past while its hop failed")
	}

	faults.heal()
	adaptertest.WaitUntil(t, 10*time.Second, "a hop after the broker took copies again", func() bool {
		require.NoError(t, src.commitOwned(ctx, false))
		offs, err := kadmClient(t, addrs).FetchOffsets(ctx, "hf")
		require.NoError(t, err)
		c, ok := offs.Lookup(tierTopic, 0)
		return ok && c.At >= 2
	})
	var far int
	for _, m := range readAll(t, addrs, tierTopic, 3, 5*time.Second) {
		if m.ID == "far" {
			far++
		}
	}
	require.GreaterOrEqual(t, far, 2, "the far copy hopped")
}

// The scenario through the runtime: a handler asks for a retry in
// 13 h, and an unrelated message failing later retries after 1 s in the
// same tier: it is handled about 1 s later, not after the far one.
func TestRuntimeFarRetryDoesNotBlockTier(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("hoprt")
	name := topic // the group: unique, as a real broker keeps groups across runs
	const tier = time.Second
	tierTopic := RetryTopic(topic, name, tier)
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: name, TopicPartitions: 1, Tiers: retry.Tiers{tier}})
	adm := kadmClient(t, addrs)
	tierEnd := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, tierTopic)
		if err != nil {
			return 0
		}
		e, ok := ends.Lookup(tierTopic, 0)
		if !ok || e.Err != nil {
			return 0
		}
		return e.Offset
	}
	var rec recorder
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		rec.add(m)
		switch {
		case m.ID == "far":
			return consumer.RetryAfter(errors.New("come back tomorrow"), 13*time.Hour)
		case m.Attempt == 1:
			// Fail only once the far copy is in the tier, ahead of this one
			// (the handler cannot fail t: it polls, bounded, and goes on).
			for deadline := time.Now().Add(10 * time.Second); tierEnd() < 1 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			return errors.New("try again in a second")
		}
		return nil
	}), consumer.Config{Name: name, Retry: retry.Policy{MaxAttempts: 3, InitialInterval: tier, Jitter: retry.NoJitter}})
	publish(t, client(t, addrs), topic,
		&consumer.Message{ID: "far", Key: "a", Body: []byte("far")},
		&consumer.Message{ID: "near", Key: "b", Body: []byte("near")})
	adaptertest.WaitUntil(t, 20*time.Second, "the near retry", func() bool { return rec.len() >= 3 })
	got := rec.all()
	var nearAt []time.Time
	for i, m := range got {
		if m.ID == "near" {
			nearAt = append(nearAt, rec.at[i])
		}
	}
	require.Len(t, nearAt, 2, "near: attempts 1 and 2")
	wait := nearAt[1].Sub(nearAt[0])
	t.Logf("the near retry came %s after its failure (tier %s)", wait, tier)
	require.GreaterOrEqual(t, wait, tier)
	require.Less(t, wait, tier+4*time.Second)
	// An observation window of two more tier delays: the far one hops and
	// is never handled again.
	time.Sleep(2 * tier)
	stop()
	far := 0
	for _, m := range rec.all() {
		if m.ID == "far" {
			far++
		}
	}
	require.Equal(t, 1, far, "the far retry was handled before it was due")
	require.Empty(t, readAll(t, addrs, DeadLetterTopic(topic, name), 0, 0))
}
