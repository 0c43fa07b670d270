package console

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/retry"
)

// letter is a message to dead-letter: its handler fails with err
// (permanently), or panics when panics is set.
type letter struct {
	id, key string
	body    []byte
	headers map[string]string
	err     string
	panics  bool
}

// seed publishes letters to source and runs consumer name on them, through
// the real runtime, until each is dead-lettered (a panic is retried once,
// quickly), then waits until the broker lists want dead letters (these and
// any seeded before).
func seed(t testing.TB, br adapters.Broker, source, name string, letters []letter, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	byID := map[string]letter{}
	var msgs []*consumer.Message
	for _, l := range letters {
		byID[l.id] = l
		msgs = append(msgs, &consumer.Message{ID: l.id, Key: l.key, Body: l.body, Headers: l.headers})
	}
	src, err := br.Source(ctx, source, name)
	require.NoError(t, err)
	require.NoError(t, br.Publish(ctx, source, msgs...))
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		l, ok := byID[m.ID]
		if !ok {
			return fmt.Errorf("seed: unexpected message %q", m.ID)
		}
		if l.panics {
			panic(l.err)
		}
		return consumer.Permanent(fmt.Errorf("%s", l.err))
	})
	var mu sync.Mutex
	dead := map[string]bool{}
	done := make(chan struct{})
	obs := observer(func(ev consumer.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Outcome == consumer.OutcomeDeadLettered && !dead[ev.Message.ID] {
			if dead[ev.Message.ID] = true; len(dead) == len(letters) {
				close(done)
			}
		}
	})
	c, err := consumer.New(src, h, consumer.Config{Name: name, Observer: obs, Logger: slog.New(slog.DiscardHandler),
		Duplicates: consumer.AllowDuplicates("test: the handler only fails, it has no effect to repeat"),
		Retry:      retry.Policy{MaxAttempts: 2, InitialInterval: 10 * time.Millisecond}})
	require.NoError(t, err)
	run := make(chan error, 1)
	go func() { run <- c.Run(ctx) }()
	select {
	case <-done:
	case err := <-run:
		t.Fatalf("seed: the consumer stopped: %v", err)
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("seed: %d of %d messages dead-lettered before the deadline", len(dead), len(letters))
	}
	require.NoError(t, c.Stop(ctx))
	<-run
	for {
		dls, err := br.DeadLetters(ctx, source, name, 0)
		require.NoError(t, err)
		if len(dls) == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("seed: the broker lists %d dead letters, want %d", len(dls), want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Seed is seed for the browser tests (package console_test), with letters
// made by NewSeedLetter.
var Seed = seed

// SeedLetter is a letter for Seed.
type SeedLetter = letter

// NewSeedLetter returns the letter whose handler fails permanently with
// err, or panics with it when panics is set.
func NewSeedLetter(id, key string, body []byte, headers map[string]string, err string, panics bool) SeedLetter {
	return letter{id: id, key: key, body: body, headers: headers, err: err, panics: panics}
}

type observer func(consumer.Event)

func (f observer) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (observer) BreakerChanged(bool)                            {}

// names returns a unique source and consumer name (real brokers keep
// queues between runs).
func names() (string, string) {
	n := rand.Uint32()
	return fmt.Sprintf("payments-%d", n), fmt.Sprintf("ledger-%d", n)
}

// fixture is a console over a broker and a migrated Postgres schema, and a
// browser-like client with a cookie jar.
type fixture struct {
	t      *testing.T
	br     adapters.Broker
	db     *pgtest.DB
	srv    *Server
	ts     *httptest.Server
	client *http.Client
}

func memBroker(t *testing.T) adapters.Broker {
	t.Helper()
	br, err := adapters.Open(t.Context(), "mem://", adapters.WithMemoryBroker(memory.NewBroker()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	return br
}

func newFixture(t *testing.T, br adapters.Broker, tune func(*Config)) *fixture {
	t.Helper()
	db := pgtest.New(t)
	cfg := Config{Broker: br, Pool: db.Pool, Schema: db.Schema, User: "alice", Logger: slog.New(slog.DiscardHandler)}
	if tune != nil {
		tune(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		require.NoError(t, srv.Close(context.Background()))
	})
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &fixture{t: t, br: br, db: db, srv: srv, ts: ts,
		client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get fetches path and returns status and body.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	resp, err := f.client.Get(f.ts.URL + path)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp.StatusCode, string(b)
}

// page fetches path and requires 200.
func (f *fixture) page(path string) string {
	f.t.Helper()
	code, body := f.get(path)
	require.Equal(f.t, http.StatusOK, code, body)
	return body
}

// post sends form to path, adding the CSRF token of the client's session
// unless form sets csrf itself; extra headers are set as given.
func (f *fixture) post(path string, form url.Values, headers ...string) *http.Response {
	f.t.Helper()
	if _, ok := form["csrf"]; !ok && path != "/login" {
		form.Set("csrf", f.csrf())
	}
	req, err := http.NewRequest(http.MethodPost, f.ts.URL+path, strings.NewReader(form.Encode()))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.client.Do(req)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// csrf returns the CSRF token of the client's session ("" without one),
// first visiting / so that a console without tokens gives it a session.
func (f *fixture) csrf() string {
	f.t.Helper()
	if _, _, ok := f.sessionOf(); !ok {
		f.get("/")
	}
	id, _, ok := f.sessionOf()
	if !ok {
		return ""
	}
	return f.srv.sessions.csrf(id)
}

// sessionOf returns the client's session from its cookie jar.
func (f *fixture) sessionOf() (string, string, bool) {
	u, _ := url.Parse(f.ts.URL)
	for _, c := range f.client.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			f.srv.sessions.mu.Lock()
			defer f.srv.sessions.mu.Unlock()
			s, ok := f.srv.sessions.m[c.Value]
			return c.Value, s.user, ok
		}
	}
	return "", "", false
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// testids returns the text of every element with data-testid id (flat:
// the element's inner text up to its closing tag).
func testids(body, id string) []string {
	re := regexp.MustCompile(`data-testid="` + regexp.QuoteMeta(id) + `"[^>]*>([^<]*)<`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// formOf returns the HTML of the form with data-testid id.
func formOf(body, id string) string {
	_, rest, ok := strings.Cut(body, `data-testid="`+id+`"`)
	if !ok {
		return ""
	}
	form, _, _ := strings.Cut(rest, "</form>")
	return form
}

func htmlUnescape(s string) string { return html.UnescapeString(s) }
