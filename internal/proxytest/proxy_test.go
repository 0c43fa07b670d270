package proxytest_test

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/internal/proxytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes lines back until the connection closes.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func roundTrip(c net.Conn, line string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// dialAndTalk connects to addr and exchanges a line. A reset may surface at
// the dial (when it beats the handshake's completion) or at the exchange.
func dialAndTalk(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = roundTrip(c, "hello")
	return err
}

func TestForwardCutRefuseAccept(t *testing.T) {
	p, err := proxytest.New(echoServer(t))
	require.NoError(t, err)
	defer p.Close()

	c1, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c1.Close()
	got, err := roundTrip(c1, "hello")
	require.NoError(t, err)
	require.Equal(t, "hello\n", got)
	require.Equal(t, 1, p.Open())
	require.EqualValues(t, 1, p.Accepted())

	// Cut resets the open connection.
	p.Cut()
	_, err = roundTrip(c1, "again")
	require.Error(t, err)
	require.Eventually(t, func() bool { return p.Open() == 0 }, 5*time.Second, 5*time.Millisecond)

	// Refuse resets new connections before they reach the target.
	p.Refuse()
	require.Error(t, dialAndTalk(p.Addr()))
	require.Eventually(t, func() bool { return p.Refused() == 1 }, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 1, p.Accepted())

	// Accept forwards again.
	p.Accept()
	c3, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c3.Close()
	got, err = roundTrip(c3, "back")
	require.NoError(t, err)
	require.Equal(t, "back\n", got)
	require.EqualValues(t, 2, p.Accepted())
}

func TestCloseResetsConnections(t *testing.T) {
	p, err := proxytest.New(echoServer(t))
	require.NoError(t, err)
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = roundTrip(c, "x")
	require.NoError(t, err)

	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	_, err = roundTrip(c, "y")
	require.Error(t, err)
	_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
	require.Error(t, err, "the listener is closed")
}

func TestUnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Start the proxy while the target port is taken, so it cannot get that
	// port itself (and forward to itself), then free it.
	p, err := proxytest.New(ln.Addr().String())
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, ln.Close()) // nothing listens on the target now
	require.Error(t, dialAndTalk(p.Addr()))
	require.EqualValues(t, 0, p.Accepted())
}
