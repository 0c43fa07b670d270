package redis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// dropHook deletes a stream and its retry stream (their consumer groups
// with them) right before the first command armed matches: the group
// vanishes in the middle of a call of the Source, as after a Redis restart
// without persistence.
type dropHook struct {
	redis   *goredis.Client // without the hook
	keys    []string
	match   atomic.Pointer[func(goredis.Cmder) bool]
	dropped chan struct{}
}

func (h *dropHook) arm(match func(goredis.Cmder) bool) { h.match.Store(&match) }

func (h *dropHook) check(cmd goredis.Cmder) error {
	m := h.match.Load()
	if m == nil || !(*m)(cmd) || !h.match.CompareAndSwap(m, nil) {
		return nil
	}
	if err := h.redis.Del(context.Background(), h.keys...).Err(); err != nil {
		return fmt.Errorf("dropHook: deleting %v: %w", h.keys, err)
	}
	close(h.dropped)
	return nil
}

// isScript reports whether cmd runs script (EVALSHA).
func isScript(cmd goredis.Cmder, script *goredis.Script) bool {
	args := cmd.Args()
	return cmd.Name() == "evalsha" && len(args) > 1 && fmt.Sprint(args[1]) == script.Hash()
}

// TestGroupGoneMidCall: the stream and its consumer group vanish right
// before a reclaim pass (XAUTOCLAIM), a blocking read (XREADGROUP), a
// settlement script and a lease renewal. Each time the Source recreates
// the group by itself (its calls fail with NOGROUP, however wrapped) and
// intake resumes: a message published afterwards is received with
// Attempt 1 within 10s, no error reaching Receive's caller.
func TestGroupGoneMidCall(t *testing.T) {
	cases := []struct {
		name  string
		match func(goredis.Cmder) bool
		// settle runs before the drop, on a received delivery (nil: the
		// drop happens inside Receive).
		settle func(t *testing.T, d consumer.Delivery)
	}{
		{name: "reclaim", match: func(c goredis.Cmder) bool { return isScript(c, reclaimScript) }},
		{name: "read", match: func(c goredis.Cmder) bool { return c.Name() == "xreadgroup" }},
		{name: "retry", match: func(c goredis.Cmder) bool { return isScript(c, retryScript) },
			settle: func(t *testing.T, d consumer.Delivery) {
				if err := d.Retry(t.Context(), time.Millisecond, map[string]string{consumer.HeaderAttempt: "2"}); err == nil {
					t.Error("Retry returned nil although its group was gone")
				}
			}},
		{name: "renewal", match: func(c goredis.Cmder) bool { return isScript(c, renewScript) },
			settle: func(t *testing.T, d consumer.Delivery) {
				select {
				case <-d.(consumer.Leased).Lost():
				case <-time.After(10 * time.Second):
					t.Error("the lease of an entry whose group vanished was not lost within 10s")
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stream := adaptertest.SourceName("nogroup-" + tc.name)
			plain := newClient(t)
			hook := &dropHook{redis: plain, keys: []string{stream, RetryStream(stream, "ledger")}, dropped: make(chan struct{})}
			client := newClient(t, faultHook{check: hook.check})
			cfg := Config{Stream: stream, Consumer: "ledger", Lease: time.Second, ReclaimInterval: time.Second}
			if tc.settle == nil {
				// The first Receive reclaims, then reads.
				hook.arm(tc.match)
			}
			src := newSource(t, client, cfg)
			if tc.settle != nil {
				publish(t, plain, stream, testMessages("before", 1)...)
				d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
				hook.arm(tc.match)
				tc.settle(t, d)
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-hook.dropped:
					m := testMessages("after", 1)[0]
					if err := plain.XAdd(context.Background(), &goredis.XAddArgs{Stream: stream, Values: EntryFields(m)}).Err(); err != nil {
						t.Errorf("publishing after the drop: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Error("the stream was never dropped: the armed command did not run within 10s")
				}
			}()
			got := adaptertest.ReceiveN(t, src, 1, 10*time.Second)
			wg.Wait()
			if m := got[0].Message(); m.ID != "after-00" || m.Attempt != 1 {
				t.Errorf("got %s attempt %d, want after-00 attempt 1", m.ID, m.Attempt)
			}
			ackAll(t, got)
		})
	}
}
