package console

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sessionCookieOf logs in through srv as a request from remote with the
// given headers and returns the session cookie set.
func sessionCookieOf(t *testing.T, srv *Server, remote string, headers ...string) *http.Cookie {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	req.RemoteAddr = remote
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	for _, c := range rec.Result().Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatal("no session cookie")
	return nil
}

// Behind a TLS-terminating proxy the operator trusts, the session cookie
// is Secure; a forged X-Forwarded-Proto from anyone else changes nothing.
// The bug it catches: Secure decided by r.TLS alone, lost behind a proxy.
func TestSecureCookieBehindTrustedProxy(t *testing.T) {
	f := newFixture(t, memBroker(t), func(c *Config) {
		c.Tokens = map[string]string{testToken: "bob"}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	require.True(t, sessionCookieOf(t, f.srv, "10.1.2.3:4000", "X-Forwarded-Proto", "https").Secure, "from a trusted proxy")
	require.True(t, sessionCookieOf(t, f.srv, "10.1.2.3:4000", "X-Forwarded-Proto", "http, https").Secure, "last value counts")
	require.False(t, sessionCookieOf(t, f.srv, "10.1.2.3:4000").Secure, "a trusted proxy over plain HTTP")
	require.False(t, sessionCookieOf(t, f.srv, "10.1.2.3:4000", "X-Forwarded-Proto", "http").Secure)
	require.False(t, sessionCookieOf(t, f.srv, "192.168.1.9:4000", "X-Forwarded-Proto", "https").Secure, "an untrusted peer's header")
	// Over TLS itself, whoever the peer is.
	req := httptest.NewRequest(http.MethodPost, "https://127.0.0.1/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	require.True(t, rec.Result().Cookies()[0].Secure)
}

func TestClientOf(t *testing.T) {
	srv := &Server{cfg: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}}
	for _, c := range []struct {
		remote, xff, want string
	}{
		{"6.6.6.6:1", "", "6.6.6.6"},
		{"6.6.6.6:1", "1.2.3.4", "6.6.6.6"},                     // an untrusted peer's header is ignored
		{"10.0.0.1:1", "1.2.3.4", "1.2.3.4"},                    // the proxy's client
		{"10.0.0.1:1", "9.9.9.9, 1.2.3.4", "1.2.3.4"},           // the client's own forged hop is left of it
		{"10.0.0.1:1", "9.9.9.9, 1.2.3.4, 10.0.0.7", "1.2.3.4"}, // a chain of trusted proxies
		{"10.0.0.1:1", "10.0.0.9, 10.0.0.7", "10.0.0.9"},        // every hop trusted: the leftmost
		{"10.0.0.1:1", "garbage", "10.0.0.1"},
		{"10.0.0.1:1", "", "10.0.0.1"},
		{"[fd00::1]:1", "[2001:db8::5]:443", "2001:db8::5"},
		{"[::ffff:10.0.0.1]:1", "1.2.3.4", "1.2.3.4"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		require.Equal(t, c.want, srv.clientOf(r).addr, "%s %s", c.remote, c.xff)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Add("X-Forwarded-For", "5.5.5.5")
	r.Header.Add("X-Forwarded-For", "1.2.3.4")
	require.Equal(t, "1.2.3.4", srv.clientOf(r).addr, "several header lines")
}
