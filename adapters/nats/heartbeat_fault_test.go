//go:build faults

package nats

import (
	"context"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestFaultMissedHeartbeatsKeepSubscription: a server that stops answering for
// a while (paused with SIGSTOP past two heartbeats) makes the pull
// subscriptions report missed heartbeats; their consumers are still there
// afterwards, so the Source keeps its subscriptions (nats.go pulls again by
// itself) and a message published after the pause is handed out. It
// catches a Source that replaces a subscription on every missed heartbeat,
// stranding what it buffered until AckWait and counting those deliveries
// against MaxDeliver (TestRetriedCopyNotDeadLetteredEarly dead-lettered a
// retried copy that way on a loaded machine).
func TestFaultMissedHeartbeatsKeepSubscription(t *testing.T) {
	h := newFaultHarness(t)
	missed := make(chan struct{}, 8)
	log := slog.New(&notifyHandler{Handler: slog.DiscardHandler, match: "pull subscription", notify: missed})
	cfg := Config{URL: h.srv.url(), Source: adaptertest.SourceName("heartbeat"), Consumer: "heartbeat", Logger: log}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrc(t, src)
	before := make([]jetstream.ConsumeContext, len(src.pullers))
	for i, p := range src.pullers {
		before[i] = p.current()
	}

	if err := h.srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Heartbeats come every PollWait/2 (500 ms) and are missed after two.
	time.Sleep(3 * time.Second)
	if err := h.srv.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-missed:
	case <-time.After(adaptertest.WaitTimeout):
		t.Fatal("no subscription reported missed heartbeats after the server was paused for 3 s")
	}

	h.Publish(t, cfg.Source, &consumer.Message{ID: "after-pause", Body: []byte("b")})
	d := adaptertest.ReceiveN(t, src, 1, adaptertest.WaitTimeout)[0]
	if d.Message().ID != "after-pause" {
		t.Fatalf("got %q, want after-pause", d.Message().ID)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	for i, p := range src.pullers {
		if p.current() != before[i] {
			t.Errorf("the pull subscription of %s was replaced after missed heartbeats, its consumer still there", StreamName(p.subject))
		}
	}
}

// notifyHandler passes records on to Handler and signals notify for each
// whose message contains match.
type notifyHandler struct {
	slog.Handler
	match  string
	notify chan<- struct{}
}

// Enabled is true for every record: the wrapped handler may discard them
// all, the match still needs to see them.
func (h *notifyHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *notifyHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		select {
		case h.notify <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h *notifyHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &notifyHandler{Handler: h.Handler.WithAttrs(as), match: h.match, notify: h.notify}
}

func (h *notifyHandler) WithGroup(name string) slog.Handler {
	return &notifyHandler{Handler: h.Handler.WithGroup(name), match: h.match, notify: h.notify}
}
