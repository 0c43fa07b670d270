package console

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a bytes.Buffer safe for a logger and a test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// throttled is a console with a token, a fake clock and a captured log.
func throttled(t *testing.T) (*Server, *fakeClock, *syncBuffer) {
	logs := &syncBuffer{}
	f := newFixture(t, memBroker(t), func(c *Config) {
		c.Tokens = map[string]string{testToken: "bob"}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.srv.logins = newLoginLimiter(clk.now)
	return f.srv, clk, logs
}

// loginFrom posts token to /login as a request from addr and returns the
// answer.
func loginFrom(srv *Server, addr, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.RemoteAddr = addr
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// 300 wrong tokens at once from one address: 6 are checked, the rest get
// 429, and then even the right token waits out the lock. Each failure is
// logged with the address, never the token. The bug it catches: a login
// without throttling, where 300 guesses take 6 s.
func TestLoginThrottledPerClient(t *testing.T) {
	srv, clk, logs := throttled(t)
	const client = "192.0.2.7:40000"
	codes := map[int]int{}
	for i := range 300 {
		codes[loginFrom(srv, client, fmt.Sprintf("wrong-token-number-%03d-xyz", i)).Code]++
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: freeLoginFailures + 1, http.StatusTooManyRequests: 300 - freeLoginFailures - 1}, codes)
	rec := loginFrom(srv, client, testToken)
	require.Equal(t, http.StatusTooManyRequests, rec.Code, "the right token while locked")
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), "too many wrong tokens")
	require.Equal(t, http.StatusSeeOther, loginFrom(srv, "192.0.2.8:1", testToken).Code, "another address is not locked")

	out := logs.String()
	require.Equal(t, freeLoginFailures+1, strings.Count(out, `msg="console: login failed: wrong token" client=192.0.2.7`), out)
	require.NotContains(t, out, "wrong-token-number")
	require.NotContains(t, out, testToken)

	clk.advance(time.Second)
	require.Equal(t, http.StatusSeeOther, loginFrom(srv, client, testToken).Code, "after the lock")
	require.Contains(t, logs.String(), `msg="console: logged in" client=192.0.2.7 user=bob`)

	// A guesser retrying every 100 ms for 6 s gets 8 tokens checked:
	// 5 free, then locks of 1, 2 and 4 s.
	checked := 0
	for range 60 {
		if loginFrom(srv, client, "wrong-token-again-0123456").Code == http.StatusUnauthorized {
			checked++
		}
		clk.advance(100 * time.Millisecond)
	}
	require.Equal(t, 8, checked)
}

// Wrong tokens from many addresses draw on one global bucket: once it is
// empty nobody logs in until it refills.
func TestLoginThrottledGlobally(t *testing.T) {
	srv, clk, _ := throttled(t)
	for i := range globalLoginBurst {
		require.Equal(t, http.StatusUnauthorized, loginFrom(srv, fmt.Sprintf("198.51.%d.%d:1", i/250, i%250), "wrong-token-0123456789ab").Code, i)
	}
	require.Equal(t, http.StatusTooManyRequests, loginFrom(srv, "203.0.113.1:1", testToken).Code)
	clk.advance(time.Second)
	require.Equal(t, http.StatusSeeOther, loginFrom(srv, "203.0.113.1:1", testToken).Code)
	// IPv6 clients count by /64.
	for i := range freeLoginFailures + 1 {
		clk.advance(2 * time.Second)
		require.Equal(t, http.StatusUnauthorized, loginFrom(srv, fmt.Sprintf("[2001:db8::%x]:1", i+1), "wrong-token-0123456789ab").Code)
	}
	require.Equal(t, http.StatusTooManyRequests, loginFrom(srv, "[2001:db8::ffff]:1", testToken).Code)
	require.Equal(t, http.StatusSeeOther, loginFrom(srv, "[2001:db8:0:1::1]:1", testToken).Code)
}
