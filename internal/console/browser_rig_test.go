package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/internal/browsertest"
	"github.com/oncely/oncely/internal/console"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/store/postgres"
)

// The browser tests drive the console as an operator does, in headless
// Chromium (internal/browsertest), against a console.Server over a real
// broker and a migrated Postgres schema. They live in package console_test
// and reach the console through its exported API and its pages only; they
// find elements by the data-testid contract in doc.go.

// rigTimeout bounds the seeding and the broker-side checks of one test.
const rigTimeout = 40 * time.Second

// tabTimeout bounds a test's pages, from the first to the last: the SQS
// flow needs about 30 s of it (each read of its dead-letter queue ends with
// three empty one-second receives).
const tabTimeout = 50 * time.Second

// letter is a message the rig dead-letters: its handler fails permanently
// with err, or panics with it when panics is set; claimed letters get an
// idempotency claim of the consumer first (their effect committed), so a
// plan counts them as already applied.
type letter struct {
	id, key string
	body    []byte
	headers map[string]string
	err     string
	panics  bool
	claimed bool
}

// rig is one browser test's console: a broker with dead letters of one
// (source, consumer), Postgres with the claims and the audit table, the
// console served over HTTP, and a browser tab.
type rig struct {
	t            *testing.T
	br           adapters.Broker
	db           *pgtest.DB
	srv          *console.Server
	ts           *httptest.Server
	source, name string
	tab          *browsertest.Tab
}

// openBroker opens url for t (mem:// gets a fresh in-memory broker) and
// closes it when t ends.
func openBroker(t *testing.T, url string) adapters.Broker {
	t.Helper()
	var opts []adapters.Option
	if url == "mem://" {
		opts = append(opts, adapters.WithMemoryBroker(memory.NewBroker()))
	}
	opts = append(opts, adapters.WithLogger(slog.New(slog.DiscardHandler)))
	br, err := adapters.Open(t.Context(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	return br
}

// newRig dead-letters letters on (source, name) through the real consumer
// runtime, writes the claims of the claimed ones, serves a console with
// that consumer on its overview (as user alice; tune changes the Config)
// and opens a tab.
func newRig(t *testing.T, br adapters.Broker, source, name string, letters []letter, tune ...func(*console.Config)) *rig {
	t.Helper()
	db := pgtest.New(t)
	claims, err := postgres.New(db.Pool, postgres.Config{Schema: db.Schema, NoPruning: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), rigTimeout)
	defer cancel()
	for _, l := range letters {
		if !l.claimed {
			continue
		}
		dup, err := claims.Process(ctx, name, l.id, func(context.Context) error { return nil })
		require.NoError(t, err)
		require.False(t, dup, "claim %s", l.id)
	}
	require.NoError(t, claims.Close(ctx))
	seed(t, br, source, name, letters, len(letters))

	cfg := console.Config{Broker: br, Pool: db.Pool, Schema: db.Schema, User: "alice",
		Consumers: []console.Consumer{{Source: source, Name: name}}, Logger: slog.New(slog.DiscardHandler)}
	for _, f := range tune {
		f(&cfg)
	}
	srv, err := console.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		require.NoError(t, srv.Close(context.Background()))
	})
	b := browsertest.Start(t, browsertest.Config{Timeout: tabTimeout})
	return &rig{t: t, br: br, db: db, srv: srv, ts: ts, source: source, name: name, tab: b.NewTab(t)}
}

// seed dead-letters letters through console.Seed (see there).
func seed(t *testing.T, br adapters.Broker, source, name string, letters []letter, want int) {
	t.Helper()
	ls := make([]console.SeedLetter, len(letters))
	for i, l := range letters {
		ls[i] = console.NewSeedLetter(l.id, l.key, l.body, l.headers, l.err, l.panics)
	}
	console.Seed(t, br, source, name, ls, want)
}

// open navigates the tab to the console path and requires a 200.
func (r *rig) open(path string) {
	r.t.Helper()
	resp := r.tab.Navigate(r.ts.URL + path)
	require.Equal(r.t, 200, int(resp.Status), "GET %s", path)
}

// click clicks the first element matching the CSS selector, waits for the
// page it leads to and returns its HTTP status.
func (r *rig) click(sel string) int {
	r.t.Helper()
	resp, err := chromedp.RunResponse(r.tab.Context(), chromedp.Click(chromedp.CSS(sel)))
	require.NoError(r.t, err, "click %s", sel)
	return int(resp.Status)
}

// texts returns the text of every element matching the CSS selector, in
// document order.
func (r *rig) texts(sel string) []string {
	r.t.Helper()
	return browsertest.Run(r.tab, chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll(%q), e => e.textContent.trim())`, sel)))
}

// attrs returns attribute attr of every element matching sel.
func (r *rig) attrs(sel, attr string) []string {
	r.t.Helper()
	return browsertest.Run(r.tab, chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll(%q), e => e.getAttribute(%q))`, sel, attr)))
}

// text returns the text of the one element matching sel.
func (r *rig) text(sel string) string {
	r.t.Helper()
	got := r.texts(sel)
	require.Len(r.t, got, 1, "elements matching %s", sel)
	return got[0]
}

// tid is the CSS selector of data-testid id, optionally inside the
// selectors before it ("tid(row, count)" is `[data-testid=row] [data-testid=count]`).
func tid(ids ...string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		if strings.ContainsAny(id, "[.#:") {
			parts[i] = id // a CSS selector already
		} else {
			parts[i] = `[data-testid="` + id + `"]`
		}
	}
	return strings.Join(parts, " ")
}
