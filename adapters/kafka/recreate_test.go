package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// The source topic deleted and created again under a running consumer:
// every record of the new topic, published after its creation, is handled,
// in key order and as a first attempt, within the fault kit's resume bound,
// without restarting the consumer; the Source says in its log that it
// follows the new topic.
func TestSourceTopicRecreated(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("recreate")
	group := topic
	const partitions, keys, perKey = 3, 3, 10
	createTopic(t, addrs, topic, partitions)
	logs := newLogLines(logCheck)
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: partitions, Logger: slog.New(logs)})

	var (
		mu   sync.Mutex
		seen = map[string][]int{} // ID → Attempt of each call
		errs []string
		last = map[string]int{} // key → last sequence handled
	)
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID] = append(seen[m.ID], m.Attempt)
		if m.Attempt != 1 {
			errs = append(errs, fmt.Sprintf("%s: Attempt %d", m.ID, m.Attempt))
		}
		seq, _ := strconv.Atoi(string(m.Body))
		if prev, ok := last[m.Key]; ok && seq < prev {
			errs = append(errs, fmt.Sprintf("%s handled after sequence %d of its key", m.ID, prev))
		}
		last[m.Key] = seq
		return nil
	}), consumer.Config{Name: group, Concurrency: 4})
	defer stop()
	handled := func(ids []string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, id := range ids {
			if len(seen[id]) > 0 {
				n++
			}
		}
		return n
	}
	batch := func(gen string) ([]*consumer.Message, []string) {
		var msgs []*consumer.Message
		var ids []string
		for seq := range perKey {
			for k := range keys {
				id := fmt.Sprintf("%s-k%d-%02d", gen, k, seq)
				msgs = append(msgs, &consumer.Message{ID: id, Key: fmt.Sprintf("k%d", k), Body: []byte(strconv.Itoa(seq))})
				ids = append(ids, id)
			}
		}
		return msgs, ids
	}

	before, beforeIDs := batch("old")
	publish(t, client(t, addrs), topic, before...)
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the first topic's records", func() bool { return handled(beforeIDs) == len(beforeIDs) })

	adm := kadmClient(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the topic deleted", func() bool {
		md, err := adm.ListTopics(ctx, topic)
		return err == nil && !md.Has(topic)
	})
	mu.Lock()
	clear(last) // the new topic's sequences start again
	mu.Unlock()
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the topic created again", func() bool {
		resp, err := adm.CreateTopics(ctx, partitions, -1, nil, topic)
		return err == nil && (resp.Error() == nil || errors.Is(resp.Error(), kerr.TopicAlreadyExists))
	})
	after, afterIDs := batch("new")
	publish(t, client(t, addrs), topic, after...) // a client that never knew the old topic
	created := time.Now()
	for handled(afterIDs) < len(afterIDs) {
		if time.Since(created) > adaptertest.ResumeBound {
			t.Fatalf("stalled: %d of %d records of the recreated topic handled within %s", handled(afterIDs), len(afterIDs), adaptertest.ResumeBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("every record of the recreated topic handled %.1f s after it was published", time.Since(created).Seconds())
	mu.Lock()
	require.Empty(t, errs)
	mu.Unlock()
	require.True(t, logs.has(recreatedLog), "no log line saying the Source follows the new topic")
}

// logLines records the messages logged through it and passes every record
// on to next.
type logLines struct {
	next slog.Handler
	mu   *sync.Mutex
	msgs *[]string
}

func newLogLines(next slog.Handler) *logLines {
	return &logLines{next: next, mu: &sync.Mutex{}, msgs: &[]string{}}
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }

func (l *logLines) Handle(ctx context.Context, r slog.Record) error {
	l.mu.Lock()
	*l.msgs = append(*l.msgs, r.Message)
	l.mu.Unlock()
	return l.next.Handle(ctx, r)
}

func (l *logLines) WithAttrs(as []slog.Attr) slog.Handler {
	return &logLines{next: l.next.WithAttrs(as), mu: l.mu, msgs: l.msgs}
}

func (l *logLines) WithGroup(name string) slog.Handler {
	return &logLines{next: l.next.WithGroup(name), mu: l.mu, msgs: l.msgs}
}

// has reports whether msg was logged.
func (l *logLines) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range *l.msgs {
		if m == msg {
			return true
		}
	}
	return false
}

// A dead-letter topic deleted under a running consumer is created again by
// the next dead letter, which is stored there: nothing is lost.
func TestDeadLetterTopicDeleted(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("dlqgone")
	group := topic
	createTopic(t, addrs, topic, 1)
	logs := newLogLines(logCheck)
	src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: 1, Logger: slog.New(logs)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadmClient(t, addrs)
	resp, err := adm.DeleteTopics(ctx, DeadLetterTopic(topic, group))
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the dead-letter topic deleted", func() bool {
		md, err := adm.ListTopics(ctx, DeadLetterTopic(topic, group))
		return err == nil && !md.Has(DeadLetterTopic(topic, group))
	})
	stop := runConsumer(t, src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		return consumer.Permanent(errors.New("poison"))
	}), consumer.Config{Name: group})
	defer stop()
	publish(t, client(t, addrs), topic, &consumer.Message{ID: "p1", Key: "k", Body: []byte("poison")})
	dl := readAll(t, addrs, DeadLetterTopic(topic, group), 1, adaptertest.ResumeBound)
	require.Len(t, dl, 1)
	require.Equal(t, "p1", dl[0].ID)
	require.True(t, logs.has("copy topic missing; creating it again"))
}
