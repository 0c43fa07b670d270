package nats

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestPullBufferNotHandedOutTwice: a slow handler (500ms a message, one at
// a time) behind a pull buffer (Prefetch 8) that takes longer to drain than
// AckWait (2s). Each message is handed out once: a message whose lease ran
// out while it waited in the Source is not handed out a second time when
// the server delivers it again.
func TestPullBufferNotHandedOutTwice(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("pullbuffer")
	cfg := Config{Source: source, Consumer: "pullbuffer", Prefetch: 8, AckWait: 2 * time.Second}
	c.cleanup(t, source, cfg.Consumer)
	const total = 16
	var msgs []*consumer.Message
	for i := range total {
		msgs = append(msgs, &consumer.Message{ID: fmt.Sprintf("m-%02d", i), Body: []byte("b")})
	}
	c.publish(t, source, msgs...)

	src := c.newSource(t, cfg)
	var mu sync.Mutex
	handled := map[string]int{}
	calls := 0
	all := make(chan struct{})
	handler := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		select {
		case <-time.After(500 * time.Millisecond): // the handler's work
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		defer mu.Unlock()
		handled[m.ID]++
		if calls++; len(handled) == total && handled[m.ID] == 1 {
			close(all)
		}
		return nil
	})
	cons, err := consumer.New(src, handler, consumer.Config{Name: cfg.Consumer, Concurrency: 1, MaxInFlight: cfg.Prefetch,
		Logger: slog.New(slog.DiscardHandler), Duplicates: consumer.AllowDuplicates("test: counts hand-outs")})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- cons.Run(context.Background()) }()
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Error("not every message handled within a minute")
	}
	// Redeliveries of leases that ran out come within AckWait of the last
	// ack: wait until the server has nothing unacknowledged.
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "every message acknowledged", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cc, err := c.js.Consumer(ctx, StreamName(source), cfg.Consumer)
		if err != nil {
			t.Fatal(err)
		}
		ci := cc.CachedInfo()
		return ci.NumPending == 0 && ci.NumAckPending == 0
	})
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cons.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range msgs {
		if n := handled[m.ID]; n != 1 {
			t.Errorf("%s handled %d times, want 1", m.ID, n)
		}
	}
	if calls != total {
		t.Errorf("%d hand-outs of %d messages", calls, total)
	}
}

// staleMsg is a later delivery of a message: its metadata has a higher
// delivery count. It records its acks.
type staleMsg struct {
	jetstream.Msg
	later time.Duration // added to the store time: another message at the same sequence
	acks  atomic.Int64
}

func (m *staleMsg) Metadata() (*jetstream.MsgMetadata, error) {
	md, err := m.Msg.Metadata()
	if err != nil {
		return nil, err
	}
	later := *md
	later.NumDelivered++
	later.Timestamp = later.Timestamp.Add(m.later)
	return &later, nil
}

func (m *staleMsg) Ack() error { m.acks.Add(1); return nil }

// TestStaleDeliveryOfSettledMessage: a delivery of a message the Source
// acked before it came (it waited in the pull buffer behind the first) is
// acked again and not handed out; a message stored later at the same
// sequence is handed out.
func TestStaleDeliveryOfSettledMessage(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("stale")
	cfg := Config{Source: source, Consumer: "stale", Prefetch: 8}
	c.cleanup(t, source, cfg.Consumer)
	c.publish(t, source, &consumer.Message{ID: "m-1", Body: []byte("b")})
	src := c.newSource(t, cfg)
	defer closeSrc(t, src)
	d := adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout)[0].(*delivery)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	stale := &staleMsg{Msg: d.m}
	src.deliver(d.from, stale)
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the stale delivery acked", func() bool { return stale.acks.Load() > 0 })
	adaptertest.AssertQuiet(t, src, adaptertest.QuietWindow)

	// The stream deleted and created again: another message has the
	// sequence. It is handed out.
	other := &staleMsg{Msg: d.m, later: time.Hour}
	src.deliver(d.from, other)
	got := adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout)[0]
	if err := got.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the other message acked", func() bool { return other.acks.Load() > 0 })
}
