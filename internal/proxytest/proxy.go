// Package proxytest is a small TCP proxy for fault tests: it listens on
// 127.0.0.1, forwards every connection to a target, and can cut the current
// connections and refuse new ones on demand, simulating a server that crashes
// and comes back.
package proxytest

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from Addr to a target. Its methods are safe
// for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	refusing atomic.Bool
	accepted atomic.Int64
	refused  atomic.Int64

	mu     sync.Mutex
	conns  map[*pair]struct{}
	closed bool

	wg sync.WaitGroup
}

type pair struct {
	client, server net.Conn
	once           sync.Once
}

func (p *pair) close() {
	p.once.Do(func() {
		reset(p.client)
		reset(p.server)
	})
}

// reset closes c with SO_LINGER 0, so the peer sees a connection reset (as
// when a server process dies) rather than an orderly close.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// New starts a proxy listening on 127.0.0.1:0 that forwards to target
// ("host:port"). Close it when done.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: make(map[*pair]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's listening address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut resets every connection currently open through the proxy. New
// connections are still accepted unless Refuse was called.
func (p *Proxy) Cut() {
	p.mu.Lock()
	ps := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		ps = append(ps, c)
	}
	p.mu.Unlock()
	for _, c := range ps {
		c.close()
	}
}

// Refuse makes the proxy reset every new connection at once, before any byte
// reaches the target, until Accept is called. Open connections are left alone;
// call Cut as well to simulate a server that is down.
func (p *Proxy) Refuse() { p.refusing.Store(true) }

// Accept undoes Refuse: new connections are forwarded again.
func (p *Proxy) Accept() { p.refusing.Store(false) }

// Open returns the number of connections currently forwarded.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Accepted returns how many connections were forwarded since New.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Refused returns how many connections were reset because of Refuse.
func (p *Proxy) Refused() int64 { return p.refused.Load() }

// Close stops listening, resets every open connection and waits for the
// proxy's goroutines to end. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	var err error
	if !already {
		err = p.ln.Close()
	}
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary accept errors (EMFILE and the like): back off briefly.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if p.refusing.Load() {
			p.refused.Add(1)
			reset(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		reset(client)
		return
	}
	pr := &pair{client: client, server: server}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pr.close()
		return
	}
	p.conns[pr] = struct{}{}
	p.mu.Unlock()
	p.accepted.Add(1)

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	pr.close()
	<-done

	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}
