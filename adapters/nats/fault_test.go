//go:build faults

package nats

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
)

// faultAckWait is the Sources' AckWait in the fault matrix: short, so a
// lease lost in a cut expires within a few seconds.
const faultAckWait = 2 * time.Second

// faultHarness answers the fault matrix on a private nats-server, reached
// by the Sources through a TCP proxy; the harness publishes and reads dead
// letters straight from the server.
type faultHarness struct {
	srv   *privateServer
	proxy *proxytest.Proxy
	c     *conn // straight to srv
}

var _ adaptertest.Faulter = (*faultHarness)(nil)

func newFaultHarness(t *testing.T) *faultHarness {
	srv := startPrivateServer(t)
	proxy, err := proxytest.New(srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	nc, err := nats.Connect(srv.url(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &faultHarness{srv: srv, proxy: proxy, c: &conn{url: srv.url(), nc: nc, js: js}}
}

func (h *faultHarness) NewSource(t testing.TB, source, name string) consumer.Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src, err := New(ctx, Config{URL: "nats://" + h.proxy.Addr(), Source: source, Consumer: name, AckWait: faultAckWait, Prefetch: 8, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return src
}

func (h *faultHarness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	h.c.publish(t, source, msgs...)
}

func (h *faultHarness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := h.c.deadLetters(t, source, name)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FaultCase injects a fault into the private server, its proxy or its
// streams, or runs the adapter's own test of it.
func (h *faultHarness) FaultCase(f adaptertest.Fault) adaptertest.FaultCase {
	switch f {
	case adaptertest.BrokerRestart:
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.srv.kill()
			return h.srv.start
		}}
	case adaptertest.BrokerRestartNoPersistence:
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.srv.kill()
			h.srv.wipe()
			return h.srv.start
		}}
	case adaptertest.CutMidReceive, adaptertest.CutMidSettle:
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.proxy.Refuse()
			h.proxy.Cut()
			return h.proxy.Accept
		}}
	case adaptertest.LeaseLost:
		// The cut outlasts AckWait: the server takes back the deliveries
		// the handlers hold.
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.proxy.Refuse()
			h.proxy.Cut()
			time.Sleep(faultAckWait + 500*time.Millisecond)
			return h.proxy.Accept
		}}
	case adaptertest.CopyRefused:
		return adaptertest.FaultCase{Inject: func(t testing.TB, source string) func() {
			return h.refuseCopies(t, RetrySubject(source, adaptertest.ConsumerName))
		}}
	case adaptertest.DeadLetterGone:
		return adaptertest.FaultCase{Inject: h.deleteDeadLetters}
	case adaptertest.DeliveryLimit:
		return adaptertest.FaultCase{Run: func(t *testing.T) {
			t.Run("CopyRefused", TestDeliveryLimitCopyRefused)
			t.Run("ClosedBeforeCopy", TestDeliveryLimitClosedBeforeCopy)
			t.Run("CrashedOnLast", TestDeliveryLimitCrashedOnLast)
		}}
	case adaptertest.DelayedRetriesSaturate:
		return adaptertest.FaultCase{Run: TestLongRetriesDoNotBlockShort}
	case adaptertest.ReplicaConfigsDiffer:
		return adaptertest.FaultCase{Run: TestDeliveryLimitReplicasDisagree}
	case adaptertest.KillInFlight:
		return adaptertest.FaultCase{Run: TestKilledSourceRedelivered}
	case adaptertest.CopyRefusedMidSettlement:
		return adaptertest.FaultCase{NotApplicable: "a settlement is one confirmed publish, then one ack: nothing is done before the copy, so a refused copy is CopyRefused"}
	}
	return adaptertest.FaultCase{}
}

// refuseCopies limits the stream of subject to messages of one byte: the
// server refuses every copy until restored.
func (h *faultHarness) refuseCopies(t testing.TB, subject string) func() {
	t.Helper()
	set := func(size int32) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := ensureStream(ctx, h.c.js, subject, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.MaxMsgSize = size
		if _, err := h.c.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatalf("setting the message size limit of %s: %v", subject, err)
		}
	}
	set(1)
	return func() { set(-1) }
}

// deleteDeadLetters deletes the dead-letter stream of source. Nothing
// restores it: the Source must create it again for its next dead letter.
func (h *faultHarness) deleteDeadLetters(t testing.TB, source string) func() {
	t.Helper()
	subject := DeadLetterSubject(source, adaptertest.ConsumerName)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.c.js.DeleteStream(ctx, StreamName(subject)); err != nil {
		t.Fatalf("deleting the stream of %s: %v", subject, err)
	}
	return func() {}
}

// TestFaultMatrix runs the fault kit's matrix on NATS JetStream.
func TestFaultMatrix(t *testing.T) {
	adaptertest.RunFaults(t, newFaultHarness(t))
}
