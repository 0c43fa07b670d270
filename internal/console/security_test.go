package console

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
)

const hostile = `<script>alert("x")</script>`

// hostileLetters carry markup in every place a message reaches a page:
// ID, key, headers (names and values), error text, JSON and text bodies,
// attribute breakouts, a huge body and a binary one.
func hostileLetters() []letter {
	huge := bytes.Repeat([]byte("<script>x</script>"), 20_000) // 360 KB
	return []letter{
		{id: `h1"><script>alert(1)</script>`, key: hostile, body: []byte(`{"html":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `","n":1}`),
			headers: map[string]string{"x-evil": hostile, "<script>h</script>": "v", "x-attr": `" onmouseover="alert(1)`}, err: hostile},
		{id: "h2", body: []byte(hostile + "<img src=x onerror=alert(1)>"), err: `"><img src=x onerror=alert(1)>`},
		{id: "h3", body: huge, err: "huge"},
		{id: "h4", body: []byte{0, 1, 2, '<', 's', 'c', 'r', 'i', 'p', 't', '>', 0xff, 0xfe}, err: "binary"},
		{id: "h5", body: []byte("x"), err: "panic " + hostile, panics: true},
	}
}

var rawMarkup = regexp.MustCompile(`(?i)<script>|<script>alert|<img src=x|onmouseover="alert|<script>h</script>`)

// No page shows a raw <script> (or any markup) that came from a message:
// html/template escapes every value. The bug it catches: a body, header or
// error rendered as template.HTML, or written unescaped.
func TestHostileMessagesAreEscapedMemory(t *testing.T) { testHostile(t, memBroker(t)) }

func TestHostileMessagesAreEscapedRabbitMQ(t *testing.T) {
	br, err := adapters.Open(t.Context(), envtest.RabbitMQ(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	testHostile(t, br)
}

func testHostile(t *testing.T, br adapters.Broker) {
	source, name := names()
	letters := hostileLetters()
	seed(t, br, source, name, letters, len(letters))
	f := newFixture(t, br, func(c *Config) { c.Consumers = []Consumer{{Source: source, Name: name}} })
	base := consumerURL(source, name)
	pages := []string{"/", base, base + "messages", base + "plan", base + "messages?text=" + url.QueryEscape("<script>")}
	for _, l := range letters {
		pages = append(pages, base+"message?id="+url.QueryEscape(l.id))
	}
	for _, p := range pages {
		body := f.page(p)
		// The only script element is the console's own.
		require.Equal(t, 1, strings.Count(body, "<script"), "page %s", p)
		require.Contains(t, body, `<script src="/static/console.js" defer></script>`)
		require.NotRegexp(t, rawMarkup, body, "page %s shows message markup unescaped", p)
	}
	body := f.page(base + "message?id=" + url.QueryEscape(letters[0].id))
	require.Contains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	require.Equal(t, []string{"json"}, testids(body, "body-kind"))
	require.Contains(t, body, `&#34;html&#34;: &#34;&lt;script&gt;`) // pretty-printed, escaped
	require.Contains(t, body, `&#34; onmouseover=&#34;alert(1)`)

	body = f.page(base + "message?id=h3")
	require.Equal(t, []string{"text"}, testids(body, "body-kind"))
	require.Equal(t, []string{"360000"}, testids(body, "body-size"))
	require.Contains(t, body, `data-testid="body-truncated">Showing the first 65536 of 360000 bytes.`)
	require.Less(t, len(body), 500_000) // cut, escaped: not 360 KB of markup times six

	body = f.page(base + "message?id=h4")
	require.Equal(t, []string{"binary"}, testids(body, "body-kind"))
	require.Contains(t, body, "00 01 02 3c 73 63 72 69  70 74 3e ff fe")
	require.Contains(t, body, "|...&lt;script&gt;..|")

	// Names in the path are the user's, and escaped too.
	code, body := f.get("/c/" + url.PathEscape(hostile) + "/" + url.PathEscape(`"><b>`) + "/")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, `source &#34;&lt;script&gt;alert(\&#34;x\&#34;)&lt;/script&gt;&#34; does not exist`)
	require.Equal(t, 1, strings.Count(body, "<script"))

	body = f.page(base + "message?id=h5")
	require.Contains(t, body, `data-testid="failure-stack"`)
	require.Equal(t, []string{consumer.ReasonPanic}, testids(body, "failure-reason"))
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, memBroker(t), nil)
	resp, err := f.client.Get(f.ts.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		require.Contains(t, csp, want)
	}
	require.NotContains(t, csp, "unsafe-inline")
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	// The one script is served, as JavaScript, from the embedded assets.
	resp, err = f.client.Get(f.ts.URL + "/static/console.js")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "javascript")
	require.Contains(t, readBody(t, resp), "data-progress-url")
	resp.Body.Close()
}

func TestCheckAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:1", "127.0.0.2:80"} {
		require.NoError(t, CheckAddr(addr, false), addr)
	}
	for _, addr := range []string{":8080", "0.0.0.0:8080", "192.168.1.5:8080", "[::]:80", "example.com:80"} {
		require.ErrorIs(t, CheckAddr(addr, false), ErrTokenRequired, addr)
		require.NoError(t, CheckAddr(addr, true), addr)
	}
	require.Error(t, CheckAddr("no-port", true))
}

const testToken = "s3cret-token-of-bob-0123456789"

// With a token, nothing is shown before login; the login sets a
// SameSite=Strict HttpOnly cookie; the actor is the token's name.
func TestTokenLogin(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{{id: "m1", err: "e"}}, 1)
	f := newFixture(t, br, func(c *Config) { c.Tokens = map[string]string{testToken: "bob"} })
	base := consumerURL(source, name)
	code, _ := f.get(base)
	require.Equal(t, http.StatusSeeOther, code)
	resp, err := f.client.Get(f.ts.URL + base)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "/login?next="+url.QueryEscape(base), resp.Header.Get("Location"))
	// An action without a session: 401, whatever the CSRF field says.
	resp = f.post(base+"redrive", url.Values{"csrf": {"x"}, "limit": {"1"}, "rate": {"1"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	resp = f.post("/login", url.Values{"token": {"wrong-token-wrong-token"}, "next": {base}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-testid="login-error"`)
	require.Empty(t, resp.Cookies())

	resp = f.post("/login", url.Values{"token": {testToken}, "next": {"//evil.example/x"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/", resp.Header.Get("Location")) // no open redirect
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == sessionCookie {
			c = k
		}
	}
	require.NotNil(t, c)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	// Logging in again gives a new session and ends the old one.
	old, _, _ := f.sessionOf()
	require.Equal(t, http.StatusSeeOther, f.post("/login", url.Values{"token": {testToken}}).StatusCode)
	fresh, _, ok := f.sessionOf()
	require.True(t, ok)
	require.NotEqual(t, old, fresh)
	_, _, stillThere := f.srv.sessions.lookup(&http.Request{Header: http.Header{"Cookie": {sessionCookie + "=" + old}}})
	require.False(t, stillThere)
	body := f.page(base)
	require.Equal(t, []string{"bob"}, testids(body, "user"))
	require.Contains(t, body, `data-testid="logout"`)
	resp = f.post("/logout", url.Values{})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code, _ = f.get(base)
	require.Equal(t, http.StatusSeeOther, code)
}

// Every action needs its session's CSRF token, comes from this origin, and
// is refused in read-only mode. The bugs they catch: a missing CSRF check,
// a token not tied to the session, no cross-origin protection, read-only
// that only hides buttons.
func TestActionsRefused(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{{id: "m1", err: "e"}}, 1)
	f := newFixture(t, br, nil)
	base := consumerURL(source, name)
	form := func() url.Values { return url.Values{"limit": {"1"}, "rate": {"5"}, "confirm": {ConfirmWord}} }
	for _, path := range []string{base + "redrive", base + "delete"} {
		noCSRF := form()
		noCSRF.Set("csrf", "")
		require.Equal(t, http.StatusForbidden, f.post(path, noCSRF).StatusCode, "no CSRF token: %s", path)
		wrong := form()
		wrong.Set("csrf", f.srv.sessions.csrf("another-session"))
		require.Equal(t, http.StatusForbidden, f.post(path, wrong).StatusCode, "another session's token: %s", path)
		require.Equal(t, http.StatusForbidden, f.post(path, form(), "Sec-Fetch-Site", "cross-site").StatusCode, "cross-site: %s", path)
		require.Equal(t, http.StatusForbidden, f.post(path, form(), "Origin", "http://evil.example").StatusCode, "cross-origin: %s", path)
	}
	dls, err := br.DeadLetters(t.Context(), source, name, 0)
	require.NoError(t, err)
	require.Len(t, dls, 1, "a refused action changed the dead letters")

	ro := newFixture(t, br, func(c *Config) { c.ReadOnly = true })
	body := ro.page(base + "plan")
	require.Contains(t, body, `data-testid="read-only-badge"`)
	require.Contains(t, body, `data-testid="read-only-note"`)
	require.NotContains(t, body, `data-testid="redrive-form"`)
	require.NotContains(t, body, `data-testid="delete-form"`)
	for _, path := range []string{base + "redrive", base + "delete", "/jobs/any/cancel"} {
		resp := ro.post(path, form())
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		require.Contains(t, readBody(t, resp), "read-only")
	}
	dls, err = br.DeadLetters(t.Context(), source, name, 0)
	require.NoError(t, err)
	require.Len(t, dls, 1, "read-only changed the dead letters")
}

// Over TLS the session cookie is Secure too.
func TestSessionCookieSecureOverTLS(t *testing.T) {
	db := pgtest.New(t)
	srv, err := New(Config{Broker: memBroker(t), Pool: db.Pool, Schema: db.Schema, Tokens: map[string]string{testToken: "bob"}})
	require.NoError(t, err)
	ts := httptest.NewTLSServer(srv)
	defer ts.Close()
	defer func() { require.NoError(t, srv.Close(t.Context())) }()
	client := ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.PostForm(ts.URL+"/login", url.Values{"token": {testToken}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	c := resp.Cookies()[0]
	require.True(t, c.Secure && c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
}
