package redis

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) {
			if err := logCheck.Err(); err != nil && code == 0 {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(code)
		}),
	)
}

// logCheck sees every line the tests' loggers write (see envtest.LogCheck).
var logCheck = envtest.NewLogCheck(slog.DiscardHandler)

func quietLogger() *slog.Logger { return slog.New(logCheck) }

// newClient connects to the test Redis (REDIS_URL), with hooks, closed at
// the end of t.
func newClient(t testing.TB, hooks ...goredis.Hook) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(envtest.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	for _, h := range hooks {
		c.AddHook(h)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newSource opens a Source on client with cfg's zero fields filled for
// tests, closed at the end of t.
func newSource(t testing.TB, client goredis.UniversalClient, cfg Config) *Source {
	t.Helper()
	cfg.Client = client
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.Lease == 0 {
		cfg.Lease = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	return src
}

// publish appends msgs to stream in order in one pipeline.
func publish(t testing.TB, client goredis.UniversalClient, stream string, msgs ...*consumer.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := client.Pipeline()
	for _, m := range msgs {
		p.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: EntryFields(m)})
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("publishing to %s: %v", stream, err)
	}
}

// readStream returns every entry of stream as a message.
func readStream(t testing.TB, client goredis.UniversalClient, stream string) []*consumer.Message {
	t.Helper()
	entries, err := client.XRange(context.Background(), stream, "-", "+").Result()
	if err != nil {
		t.Fatalf("reading %s: %v", stream, err)
	}
	out := make([]*consumer.Message, len(entries))
	for i, e := range entries {
		out[i] = DecodeEntry(stream, e)
	}
	return out
}

// harness connects the adapter conformance suite to the test Redis (or,
// with tagged set, to a Redis Cluster: each suite source name is read as
// the stream "{source}", whose keys share one slot).
type harness struct {
	client goredis.UniversalClient // the Sources' client, through the fault hook
	tagged bool

	mu    sync.Mutex
	fails map[string]adaptertest.CopyOp // source stream → the copy to fail next
}

var (
	_ adaptertest.Harness     = (*harness)(nil)
	_ adaptertest.CopyFaulter = (*harness)(nil)
)

func (h *harness) NewSource(t testing.TB, source, name string) consumer.Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src, err := New(ctx, Config{Client: h.client, Stream: h.stream(source), Consumer: name, Lease: 5 * time.Second, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func (h *harness) Publish(t testing.TB, source string, msgs ...*consumer.Message) {
	t.Helper()
	publish(t, h.client, h.stream(source), msgs...)
}

// stream is the stream holding the suite's source.
func (h *harness) stream(source string) string {
	if h.tagged {
		return "{" + source + "}"
	}
	return source
}

func (h *harness) DeadLetters(t testing.TB, source, name string, n int, timeout time.Duration) []*consumer.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := readStream(t, h.client, DeadLetterStream(h.stream(source), name))
		if len(got) >= n || !time.Now().Before(deadline) {
			for _, m := range got { // the suite's name for the tagged stream
				if h.tagged && m.Headers[consumer.HeaderOriginalSource] == h.stream(source) {
					m.Headers[consumer.HeaderOriginalSource] = source
				}
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FailNextCopy makes the next retry or dead-letter script of source fail
// in the client before it is sent: Redis stores nothing for it.
func (h *harness) FailNextCopy(t testing.TB, source string, op adaptertest.CopyOp) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fails == nil {
		h.fails = make(map[string]adaptertest.CopyOp)
	}
	h.fails[h.stream(source)] = op
}

// fault is the hook that fails the copy FailNextCopy armed.
func (h *harness) fault(cmd goredis.Cmder) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for stream, armed := range h.fails {
		if isCopy(cmd, stream, armed) {
			delete(h.fails, stream)
			return fmt.Errorf("adaptertest: injected failure of the %s copy for %s", armed, stream)
		}
	}
	return nil
}

// isCopy reports whether cmd runs the op settlement script of stream and
// the suite's consumer.
func isCopy(cmd goredis.Cmder, stream string, op adaptertest.CopyOp) bool {
	args := cmd.Args()
	if len(args) < 5 || (cmd.Name() != "evalsha" && cmd.Name() != "eval") {
		return false
	}
	script, want := deadLetterScript, DeadLetterStream(stream, adaptertest.ConsumerName)
	if op == adaptertest.CopyRetry {
		script, want = retryScript, DelayedKey(stream, adaptertest.ConsumerName)
	}
	return fmt.Sprint(args[1]) == script.Hash() && fmt.Sprint(args[4]) == want
}

// faultHook runs a check before each command and pipeline.
type faultHook struct{ check func(goredis.Cmder) error }

func (faultHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (f faultHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if err := f.check(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (f faultHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if i := slices.IndexFunc(cmds, func(c goredis.Cmder) bool { return f.check(c) != nil }); i >= 0 {
			return fmt.Errorf("injected failure of pipelined %s", cmds[i].Name())
		}
		return next(ctx, cmds)
	}
}

func TestConformance(t *testing.T) {
	h := &harness{}
	h.client = newClient(t, faultHook{check: h.fault})
	adaptertest.Run(t, h)
}
