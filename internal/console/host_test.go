package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// do sends a request with the given Host header through the fixture's
// client (and its cookies) and returns status and body.
func (f *fixture) do(method, path, host string, form url.Values) (int, string) {
	f.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, f.ts.URL+path, body)
	require.NoError(f.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Host = host
	resp, err := f.client.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	return resp.StatusCode, readBody(f.t, resp)
}

// A page that rebinds its name to 127.0.0.1 reaches the loopback console
// with its own name as Host: it gets 421 and no data, and cannot act. The
// bug it catches: a console without a token that answers any Host.
func TestForeignHostRefused(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{{id: "secret-letter-1", err: "the secret error"}}, 1)
	f := newFixture(t, br, func(c *Config) {
		c.Consumers = []Consumer{{Source: source, Name: name}}
		c.AllowedHosts = []string{"console.example", "ops.example:9"}
	})
	base := consumerURL(source, name)
	u, err := url.Parse(f.ts.URL)
	require.NoError(t, err)
	port := u.Port()
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "LOCALHOST:" + port,
		"console.example:" + port, "console.example", "ops.example:9"} {
		code, body := f.do(http.MethodGet, base+"messages", host, nil)
		require.Equal(t, http.StatusOK, code, "host %s", host)
		require.Contains(t, body, "secret-letter-1", "host %s", host)
	}
	csrf := f.csrf()
	for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port, "127.0.0.1.evil.example",
		"ops.example:" + port, "sub.console.example", "[::1]evil"} {
		for _, path := range []string{"/", base, base + "messages", base + "message?id=secret-letter-1", base + "plan", "/audit", "/jobs", "/static/console.js", "/login"} {
			code, body := f.do(http.MethodGet, path, host, nil)
			require.Equal(t, http.StatusMisdirectedRequest, code, "host %q path %s", host, path)
			require.NotContains(t, body, "secret", "host %q path %s", host, path)
			require.NotContains(t, body, source, "host %q path %s", host, path)
		}
		for _, path := range []string{base + "delete", base + "redrive", "/logout"} {
			code, _ := f.do(http.MethodPost, path, host, url.Values{"csrf": {csrf}, "limit": {"1"}, "rate": {"5"}, "confirm": {ConfirmWord}})
			require.Equal(t, http.StatusMisdirectedRequest, code, "host %q path %s", host, path)
		}
	}
	dls, err := br.DeadLetters(t.Context(), source, name, 0)
	require.NoError(t, err)
	require.Len(t, dls, 1, "a request for a foreign host changed the dead letters")
	rows, err := f.srv.audit.latest(t.Context(), 10)
	require.NoError(t, err)
	require.Empty(t, rows, "a request for a foreign host wrote the audit table")
}

func TestAllowedHostsValidated(t *testing.T) {
	for _, h := range []string{"", " ", "http://x", "x/y", "a b", "*.example", "u@h"} {
		require.Error(t, validateAllowedHost(h), h)
	}
	for _, h := range []string{"console.example", "console.example:8080", "10.0.0.5", "[fd00::1]:8080", "fd00::1"} {
		require.NoError(t, validateAllowedHost(h), h)
	}
	a := newAllowedHosts([]string{"fd00::1", "[fd00::2]:80"})
	require.True(t, a.allows("[fd00::1]:8080"))
	require.True(t, a.allows("[fd00::2]:80"))
	require.False(t, a.allows("[fd00::2]:81"))
	require.True(t, a.allows("127.0.0.5:1"))
	require.False(t, a.allows("[fe80::1%25eth0]:80"))
}
