package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// privateRedis is a redis-server of the test's own, without persistence,
// on a free port of 127.0.0.1: a test may kill and restart it without
// touching the shared Redis.
type privateRedis struct {
	t       testing.TB
	bin     string
	port    int
	dir     string
	persist bool // an append-only file synced on every write: a kill loses nothing acknowledged
	cmd     *exec.Cmd
}

// startPrivateRedis starts a private redis-server without persistence,
// stopped at the end of t. Without a redis-server binary it fails under CI
// and skips elsewhere.
func startPrivateRedis(t testing.TB) *privateRedis { return startRedisServer(t, false) }

// startRedisServer starts a private redis-server, with an append-only file
// synced on every write when persist is set.
func startRedisServer(t testing.TB, persist bool) *privateRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		envtest.Missing(t, "redis-server (apt-get install -y redis-server)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	r := &privateRedis{t: t, bin: bin, port: port, dir: t.TempDir(), persist: persist}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *privateRedis) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

func (r *privateRedis) start() {
	r.t.Helper()
	aof := []string{"--appendonly", "no"}
	if r.persist {
		aof = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	r.cmd = exec.Command(r.bin, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--save", "", "--protected-mode", "yes", "--dir", r.dir}, aof...)...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: r.addr()})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			r.t.Fatalf("the private redis-server on %s did not answer within 10s", r.addr())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill stops the server as a crash would (SIGKILL): without persistence,
// everything it held is gone.
func (r *privateRedis) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// restart kills the server and starts it again on the same port: empty
// without persistence.
func (r *privateRedis) restart() {
	r.t.Helper()
	r.kill()
	r.start()
}

// client connects to the server, closed at the end of t.
func (r *privateRedis) client(t testing.TB) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: r.addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRestartWithoutPersistence: a consumer runs while its Redis is killed
// and restarted empty (no persistence: the streams and the consumer group
// are gone). Intake resumes by itself: every message published after the
// restart is handled within 30s, without Close.
func TestRestartWithoutPersistence(t *testing.T) {
	const n = 20
	srv := startPrivateRedis(t)
	client := srv.client(t)
	stream := adaptertest.SourceName("restart")
	src := newSource(t, client, Config{Stream: stream, Consumer: "ledger", Lease: time.Second, ReclaimInterval: 100 * time.Millisecond})

	var mu sync.Mutex
	handled := map[string]bool{}
	stop := func() func() {
		_, stop := adaptertest.RunConsumer(t, src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			mu.Lock()
			defer mu.Unlock()
			handled[m.ID] = true
			return nil
		}), consumer.Config{Name: "ledger"})
		return stop
	}()
	defer stop()
	count := func(prefix string) int {
		mu.Lock()
		defer mu.Unlock()
		got := 0
		for i := range n {
			if handled[fmt.Sprintf("%s-%02d", prefix, i)] {
				got++
			}
		}
		return got
	}

	publish(t, client, stream, testMessages("before", n)...)
	adaptertest.WaitUntil(t, 30*time.Second, "the messages published before the restart", func() bool { return count("before") == n })
	srv.restart()
	// Publish as soon as the new server answers: the consumer may still be
	// backing off, or in the middle of a reclaim or a read.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := client.Ping(t.Context()).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || errors.Is(err, context.Canceled) {
			t.Fatalf("the restarted Redis does not answer: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	publish(t, client, stream, testMessages("after", n)...)
	adaptertest.WaitUntil(t, 30*time.Second, "the messages published after the restart", func() bool { return count("after") == n })
}
