package nats

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// The delivery limit is the Source's: these tests check that a message at
// its limit is never dropped, whatever happens before its dead-letter copy
// is confirmed.

// logCounter is a slog.Handler counting the records whose message contains
// sub.
type logCounter struct {
	sub string
	n   atomic.Int64
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, l.sub) {
		l.n.Add(1)
	}
	return nil
}

func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }

// refuseDeadLetters limits the dead-letter stream of source and name to one
// message, discarding new ones, and fills it: the server refuses every
// further copy. The returned func purges the stream, ending the refusal.
func (c *conn) refuseDeadLetters(t testing.TB, source, name string) (end func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject := DeadLetterSubject(source, name)
	s, err := ensureStream(ctx, c.js, subject, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = 1, jetstream.DiscardNew
	if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("limiting the dead-letter stream: %v", err)
	}
	if _, err := c.js.Publish(ctx, subject, []byte("filler")); err != nil {
		t.Fatalf("filling the dead-letter stream: %v", err)
	}
	return func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Purge(ctx); err != nil {
			t.Fatalf("purging the dead-letter stream: %v", err)
		}
	}
}

// waitDeadLetter waits for the one dead letter of source and name and
// checks it is id's, with reason delivery-limit.
func (c *conn) waitDeadLetter(t testing.TB, source, name, id string) {
	t.Helper()
	var dl []*consumer.Message
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the dead letter of "+id, func() bool {
		dl = c.deadLetters(t, source, name)
		return len(dl) > 0
	})
	if len(dl) != 1 || dl[0].ID != id || dl[0].Header(consumer.HeaderDeadLetterReason) != ReasonDeliveryLimit {
		for _, m := range dl {
			t.Errorf("dead letter %q reason %q", m.ID, m.Header(consumer.HeaderDeadLetterReason))
		}
		t.Fatalf("%d dead letters, want only %s's with reason %s", len(dl), id, ReasonDeliveryLimit)
	}
}

// lastDeliveryRefused brings a message to its last delivery (MaxDeliver 2)
// on a Source whose dead-letter copy the stream refuses, and waits until the
// Source has tried the copy at least twice. It returns that Source and the
// func ending the refusal.
func lastDeliveryRefused(t *testing.T, c *conn, cfg Config, m *consumer.Message) (*Source, func()) {
	t.Helper()
	c.cleanup(t, cfg.Source, cfg.Consumer)
	c.publish(t, cfg.Source, m)
	first := c.newSource(t, cfg)
	adaptertest.ReceiveN(t, first, 1, adaptertest.WaitTimeout)
	closeSrc(t, first) // delivery 1 given back: the next is the last

	end := c.refuseDeadLetters(t, cfg.Source, cfg.Consumer)
	failures := &logCounter{sub: "dead-lettering a message at its delivery limit failed"}
	cfg.Logger = slog.New(failures)
	second := c.newSource(t, cfg)
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "a refused dead-letter copy", func() bool { return failures.n.Load() > 0 })
	return second, end
}

// TestDeliveryLimitCopyRefused: the dead-letter stream refuses the copy of a
// message on its last delivery; the Source keeps trying, and once the
// refusal ends the message is dead-lettered, once, and not handed out.
func TestDeliveryLimitCopyRefused(t *testing.T) {
	c := connect(t)
	cfg := Config{Source: adaptertest.SourceName("limitrefused"), Consumer: "limitrefused", MaxDeliver: 2}
	src, end := lastDeliveryRefused(t, c, cfg, &consumer.Message{ID: "poison-1", Body: []byte("b")})
	defer closeSrc(t, src)
	end()
	c.waitDeadLetter(t, cfg.Source, cfg.Consumer, "poison-1")
	adaptertest.AssertQuiet(t, src, adaptertest.QuietWindow)
}

// TestDeliveryLimitClosedBeforeCopy: the Source holding a message's last
// delivery closes while the dead-letter stream refuses its copy. The server
// delivers the message again, and the next Source dead-letters it once the
// refusal ends.
func TestDeliveryLimitClosedBeforeCopy(t *testing.T) {
	c := connect(t)
	cfg := Config{Source: adaptertest.SourceName("limitclosed"), Consumer: "limitclosed", MaxDeliver: 2}
	src, end := lastDeliveryRefused(t, c, cfg, &consumer.Message{ID: "poison-2", Body: []byte("b")})
	closeSrc(t, src)
	end()
	next := c.newSource(t, cfg)
	defer closeSrc(t, next)
	c.waitDeadLetter(t, cfg.Source, cfg.Consumer, "poison-2")
}

// TestDeliveryLimitCrashedOnLast: a consumer created by an earlier version,
// with the server's MaxDeliver 2, whose process took the message's last
// delivery and crashed. New lifts the server's limit, so the server delivers
// the message again once the crashed lease expires, and the Source
// dead-letters it.
func TestDeliveryLimitCrashedOnLast(t *testing.T) {
	c := connect(t)
	cfg := Config{Source: adaptertest.SourceName("limitcrash"), Consumer: "limitcrash", MaxDeliver: 2, AckWait: 2 * time.Second}
	c.cleanup(t, cfg.Source, cfg.Consumer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := ensureStream(ctx, c.js, cfg.Source, 0)
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: cfg.Consumer, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: cfg.AckWait, MaxDeliver: 2, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	c.publish(t, cfg.Source, &consumer.Message{ID: "poison-3", Body: []byte("b")})
	for n := uint64(1); n <= 2; n++ {
		b, err := old.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var m jetstream.Msg
		for m = range b.Messages() {
		}
		if m == nil {
			t.Fatalf("delivery %d: nothing fetched (%v)", n, b.Error())
		}
		if md, _ := m.Metadata(); md.NumDelivered != n {
			t.Fatalf("delivery %d: num-delivered %d", n, md.NumDelivered)
		}
		if n == 1 {
			if err := m.Nak(); err != nil {
				t.Fatal(err)
			}
		} // the last is left unsettled: its process crashed
	}

	src := c.newSource(t, cfg)
	defer closeSrc(t, src)
	info, err := old.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxDeliver != -1 {
		t.Errorf("the server's MaxDeliver is %d after New, want -1 (none)", info.Config.MaxDeliver)
	}
	c.waitDeadLetter(t, cfg.Source, cfg.Consumer, "poison-3")
}

// TestDeliveryLimitReplicasDisagree: during a rolling deploy one replica has
// MaxDeliver 5, a newer one 2. The message's second delivery reaches the
// first replica, which hands it out (2 < 5); given back unsettled, it is
// delivered again, not dropped as the server's last delivery.
func TestDeliveryLimitReplicasDisagree(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("limitreplicas")
	oldCfg := Config{Source: source, Consumer: "limitreplicas", MaxDeliver: 5}
	newCfg := oldCfg
	newCfg.MaxDeliver = 2
	c.cleanup(t, source, oldCfg.Consumer)
	c.publish(t, source, &consumer.Message{ID: "m-1", Body: []byte("b")})

	older := c.newSource(t, oldCfg)
	defer closeSrc(t, older)
	d := adaptertest.ReceiveN(t, older, 1, adaptertest.WaitTimeout)[0]
	closeSrc(t, c.newSource(t, newCfg)) // deployed, then stopped: its settings stay
	for n := 2; n <= 3; n++ {
		older.release(d.(*delivery)) // as its Close, or a crash after AckWait, would
		d = adaptertest.ReceiveN(t, older, 1, adaptertest.WaitTimeout)[0]
		if d.Message().ID != "m-1" {
			t.Fatalf("delivery %d: got %q, want m-1", n, d.Message().ID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if dl := c.deadLetters(t, source, oldCfg.Consumer); len(dl) != 0 {
		t.Errorf("%d dead letters, want none (delivery 3 is below the older replica's limit)", len(dl))
	}
	adaptertest.AssertQuiet(t, older, adaptertest.QuietWindow)
}
