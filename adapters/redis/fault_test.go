//go:build faults

package redis

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
)

// faultHarness answers the fault matrix on a private redis-server that
// persists every write, reached by the Sources through a TCP proxy; the
// harness publishes and reads dead letters straight from the server.
type faultHarness struct {
	harness
	srv    *privateRedis
	proxy  *proxytest.Proxy
	direct *goredis.Client

	refuseMu sync.Mutex
	refusing map[string]adaptertest.CopyOp // source → the copy refused until restored
}

var _ adaptertest.Faulter = (*faultHarness)(nil)

func newFaultHarness(t *testing.T) *faultHarness {
	srv := startRedisServer(t, true)
	proxy, err := proxytest.New(srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	h := &faultHarness{srv: srv, proxy: proxy, direct: srv.client(t), refusing: map[string]adaptertest.CopyOp{}}
	h.client = goredis.NewClient(&goredis.Options{Addr: proxy.Addr(), MaxRetries: -1})
	h.client.AddHook(faultHook{check: h.refuse})
	t.Cleanup(func() { _ = h.client.Close() })
	return h
}

func (h *faultHarness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	publish(t, h.direct, source, msgs...)
}

func (h *faultHarness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := readStream(t, h.direct, DeadLetterStream(source, name))
		if len(got) >= n || !time.Now().Before(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refuse fails the copies a CopyRefused injection refuses, then those
// FailNextCopy armed.
func (h *faultHarness) refuse(cmd goredis.Cmder) error {
	h.refuseMu.Lock()
	for source, op := range h.refusing {
		if isCopy(cmd, source, op) {
			h.refuseMu.Unlock()
			return fmt.Errorf("adaptertest: injected refusal of the %s copy for %s", op, source)
		}
	}
	h.refuseMu.Unlock()
	return h.fault(cmd)
}

// FaultCase injects a fault into the private server, its proxy or the
// Sources' client, or runs the adapter's own test of it.
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
	case adaptertest.CopyRefused:
		return adaptertest.FaultCase{Inject: func(_ testing.TB, source string) func() {
			h.refuseMu.Lock()
			defer h.refuseMu.Unlock()
			h.refusing[source] = adaptertest.CopyRetry
			return func() {
				h.refuseMu.Lock()
				defer h.refuseMu.Unlock()
				delete(h.refusing, source)
			}
		}}
	case adaptertest.DeadLetterGone:
		return adaptertest.FaultCase{Inject: h.breakDeadLetters}
	case adaptertest.LeaseLost:
		return adaptertest.FaultCase{Run: TestLeaseLostAlone}
	case adaptertest.KillInFlight:
		return adaptertest.FaultCase{Run: TestCrashReclaim}
	case adaptertest.CopyRefusedMidSettlement:
		return adaptertest.FaultCase{Run: TestCopyFaultInsideScript}
	case adaptertest.DeliveryLimit:
		return adaptertest.FaultCase{NotApplicable: "Redis Streams has no delivery limit of its own: the retry policy is the only one (conformance case DeadLetter)"}
	case adaptertest.DelayedRetriesSaturate:
		return adaptertest.FaultCase{NotApplicable: "a retry copy waits in the delayed sorted set, outside the group's pending entries, until due: it counts against no window"}
	case adaptertest.ReplicaConfigsDiffer:
		return adaptertest.FaultCase{NotApplicable: "the group keeps no setting of a replica: each Source's Lease only decides when it reclaims entries idle that long"}
	}
	return adaptertest.FaultCase{}
}

// breakDeadLetters replaces the dead-letter stream of source by a string:
// every XADD to it fails with WRONGTYPE inside the settlement script, until
// restored (the key deleted, so the next XADD creates the stream anew).
func (h *faultHarness) breakDeadLetters(t testing.TB, source string) func() {
	t.Helper()
	key := DeadLetterStream(source, adaptertest.ConsumerName)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.direct.Set(ctx, key, "not a stream", 0).Err(); err != nil {
		t.Fatalf("breaking %s: %v", key, err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.direct.Del(ctx, key).Err(); err != nil {
			t.Fatalf("restoring %s: %v", key, err)
		}
	}
}

// wipe removes what a persisting server stored: the next start is empty.
func (r *privateRedis) wipe() {
	r.t.Helper()
	if err := os.RemoveAll(r.dir); err != nil {
		r.t.Fatal(err)
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
}

// TestFaultMatrix runs the fault kit's matrix on Redis Streams.
func TestFaultMatrix(t *testing.T) {
	adaptertest.RunFaults(t, newFaultHarness(t))
}
