package rabbitmq

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// freezer is a TCP proxy whose current connections can be frozen: bytes
// stop flowing both ways but the sockets stay open, like a broker that hangs
// or a network that black-holes packets. New connections flow normally.
type freezer struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*frozenPair
	wg     sync.WaitGroup
}

type frozenPair struct {
	a, b   net.Conn
	frozen chan struct{} // closed when frozen
	once   sync.Once
}

func newFreezer(t testing.TB, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target}
	f.wg.Go(f.accept)
	t.Cleanup(f.close)
	return f
}

func (f *freezer) accept() {
	for {
		a, err := f.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", f.target)
		if err != nil {
			_ = a.Close()
			continue
		}
		p := &frozenPair{a: a, b: b, frozen: make(chan struct{})}
		f.mu.Lock()
		f.conns = append(f.conns, p)
		f.mu.Unlock()
		f.wg.Go(func() { p.pipe(a, b) })
		f.wg.Go(func() { p.pipe(b, a) })
	}
}

// pipe copies src to dst until either closes; once frozen it discards
// whatever src sends, so nothing reaches the other side.
func (p *frozenPair) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		select {
		case <-p.frozen:
			// Hold the sockets open and silent until they are closed.
			_, _ = io.Copy(io.Discard, eofAfterClose{src})
			return
		default:
		}
		_ = src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-p.frozen:
				continue
			default:
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
	}
}

// eofAfterClose reads (and the caller drops) until the connection closes.
type eofAfterClose struct{ c net.Conn }

func (e eofAfterClose) Read(b []byte) (int, error) {
	_ = e.c.SetReadDeadline(time.Time{})
	return e.c.Read(b)
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.conns {
		p.once.Do(func() { close(p.frozen) })
	}
}

func (f *freezer) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for _, p := range f.conns {
		_ = p.a.Close()
		_ = p.b.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// TestHungBrokerTimesOut freezes the Source's connection (the broker stops
// answering but the socket stays open): a channel RPC (Backlog) returns
// after RPCTimeout instead of blocking forever, the generation ends, and the
// Source reconnects by itself and delivers again.
func TestHungBrokerTimesOut(t *testing.T) {
	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "5672"
	}
	f := newFreezer(t, u.Hostname()+":"+port)
	u.Host = f.ln.Addr().String()
	queue := uniqueName("hang")
	cleanupTopology(t, queue, "ledger", testTiers)
	src := newSource(t, Config{URL: u.String(), Queue: queue, Consumer: "ledger", RPCTimeout: 500 * time.Millisecond, Heartbeat: 2 * time.Second})
	publish(t, queue, msgs("m", 2)...)
	first := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0]

	f.freeze()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = src.Backlog(ctx)
	took := time.Since(start)
	t.Logf("Backlog on a hung connection: %v after %s", err, took.Round(time.Millisecond))
	if err == nil || took > 5*time.Second {
		t.Fatalf("Backlog returned %v after %s, want a timeout error after about 500ms", err, took)
	}
	select {
	case <-first.(consumer.Leased).Lost():
	case <-ctx.Done():
		t.Fatal("the hung generation was not ended")
	}
	// Both messages come back on the new connection.
	got := adaptertest.ReceiveN(t, src, 2, 20*time.Second)
	for _, d := range got {
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The supervisor counts a reconnect once connect returned, which is
	// after the new session's first deliveries may have arrived.
	adaptertest.WaitUntil(t, 10*time.Second, "the supervisor's reconnect", func() bool { return src.reconnects.Load() >= 1 })
}
