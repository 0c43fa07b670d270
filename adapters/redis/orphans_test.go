package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

var errReplyLost = errors.New("injected: the reply of a read was lost with its connection")

// replyLost is a hook that makes the first read of new entries that
// returns any (an XREADGROUP, alone or pipelined, or the receive script)
// run on Redis and lose its reply: the Source sees an error (retried
// false) or, as when the client retries a command on a new connection,
// the reply of the same read sent again (retried true).
type replyLost struct {
	retried bool
	script  bool // the read is the receive script, else a blocking XREADGROUP
	fired   atomic.Bool
	dropped chan struct{} // closed once a reply was lost
}

func (h *replyLost) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *replyLost) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		return h.run(ctx, []goredis.Cmder{cmd}, func(ctx context.Context) error { return next(ctx, cmd) })
	}
}

func (h *replyLost) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		return h.run(ctx, cmds, func(ctx context.Context) error { return next(ctx, cmds) })
	}
}

func (h *replyLost) run(ctx context.Context, cmds []goredis.Cmder, send func(context.Context) error) error {
	if h.fired.Load() || !slices.ContainsFunc(cmds, func(c goredis.Cmder) bool { return isRead(c, h.script) }) {
		return send(ctx)
	}
	err := send(ctx)
	if err != nil && !errors.Is(err, goredis.Nil) || !slices.ContainsFunc(cmds, readSome) || !h.fired.CompareAndSwap(false, true) {
		return err
	}
	close(h.dropped)
	if h.retried {
		return send(ctx)
	}
	for _, c := range cmds {
		c.SetErr(errReplyLost)
	}
	return errReplyLost
}

// isRead reports whether cmd reads new entries: the receive script when
// script, else XREADGROUP.
func isRead(cmd goredis.Cmder, script bool) bool {
	args := cmd.Args()
	switch strings.ToLower(cmd.Name()) {
	case "xreadgroup":
		return !script
	case "evalsha":
		return script && len(args) > 1 && args[1] == receiveScript.Hash()
	case "eval":
		return script && len(args) > 1 && strings.Contains(fmt.Sprint(args[1]), "XREADGROUP")
	}
	return false
}

// readSome reports whether cmd is a read that returned entries.
func readSome(cmd goredis.Cmder) bool {
	switch c := cmd.(type) {
	case *goredis.XStreamSliceCmd:
		return len(c.Val()) > 0 && len(c.Val()[0].Messages) > 0
	case *goredis.Cmd:
		res, _ := c.Val().([]any)
		if len(res) < 2 {
			return false
		}
		retry, _ := res[0].([]any)
		fresh, _ := res[1].([]any)
		return len(retry)+len(fresh) > 0
	}
	return false
}

// TestOrphanedReadDeliveredInOrder: a read of new entries (the receive
// script, or a blocking XREADGROUP) runs on Redis but its reply is lost
// (the Source sees an error, or the reply of the client's retry of it), so
// the five entries of key k it took are pending with the Source without
// reaching it; five more are published after. Every message must be
// handled once, with Attempt 1, and in key order: the orphans are found by
// the next read, before the entries read after them, not when their lease
// ends.
func TestOrphanedReadDeliveredInOrder(t *testing.T) {
	for _, read := range []string{"script", "block"} {
		for _, retried := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/retried=%v", read, retried), func(t *testing.T) {
				orphanedRead(t, &replyLost{retried: retried, script: read == "script", dropped: make(chan struct{})})
			})
		}
	}
}

func orphanedRead(t *testing.T, hook *replyLost) {
	client := newClient(t, hook)
	direct := newClient(t)
	stream := adaptertest.SourceName("orphans")
	t.Cleanup(func() {
		_ = direct.Del(context.Background(), stream, RetryStream(stream, "orphans"), DelayedKey(stream, "orphans")).Err()
	})
	published := 0
	publishFive := func() {
		publish(t, direct, stream, orphanMessages(published, 5)...)
		published += 5
	}
	if hook.script {
		publishFive() // the first Receive's script reads them
	}
	src := newSource(t, client, Config{Stream: stream, Consumer: "orphans", Lease: 5 * time.Second})

	var mu sync.Mutex
	var handled, errs []string
	_, stop := adaptertest.RunConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if m.Attempt != 1 {
			errs = append(errs, fmt.Sprintf("%s handled with Attempt %d, want 1", m.ID, m.Attempt))
		}
		handled = append(handled, m.ID)
		return nil
	}), consumer.Config{Name: "orphans", Concurrency: 4})
	// Until a read of the kind lost its reply (another kind may take a
	// round first), five more each round.
	for round := 0; ; round++ {
		if round == 20 {
			t.Fatal("no read of the kind returned entries in 20 rounds")
		}
		if round > 0 || !hook.script {
			publishFive()
		}
		select {
		case <-hook.dropped:
		case <-time.After(500 * time.Millisecond):
			continue
		}
		break
	}
	publishFive()
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "every message handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) >= published
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}
	if want := messageIDs(orphanMessages(0, published)); !slices.Equal(handled, want) {
		t.Errorf("handled %v, want %v (each once, in key order)", handled, want)
	}
}

// orphanMessages returns n messages of key k, k-<first>… on.
func orphanMessages(first, n int) []*consumer.Message {
	out := make([]*consumer.Message, n)
	for i := range out {
		id := fmt.Sprintf("k-%02d", first+i)
		out[i] = &consumer.Message{ID: id, Key: "k", Body: []byte(id)}
	}
	return out
}

func messageIDs(ms []*consumer.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
