package console_test

import (
	"fmt"
	"html"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/browsertest"
)

// Payloads a message brings along. Each would set window.__pwned (or add
// an element) if a page let it through as markup.
const (
	pwnKey      = `"><script>window.__pwned="key"</script>`
	pwnHeader   = `<img src=x onerror="window.__pwned='header'">`
	pwnHeaderNm = `x-"><svg onload=window.__pwned=1>`
	pwnText     = `</pre><script>window.__pwned="body"</script><img src=x onerror=window.__pwned=2>`
	pwnError    = `template <script>window.__pwned="error"</script> failed`
	pwnJSON     = `{"html":"</code><script>window.__pwned=\"json\"</script>","attr":"\" autofocus onfocus=\"window.__pwned=3"}`
	pwnID       = `id-"><script>window.__pwned="id"</script>`
)

// hostileLetters carry markup in every place a message reaches a page: ID,
// key, header names and values, error text, text and JSON bodies, plus a
// huge text body and a binary one with markup inside.
func hostileLetters() []letter {
	rng := rand.New(rand.NewPCG(7, 7))
	bin := make([]byte, 300)
	for i := range bin {
		bin[i] = byte(rng.Uint32())
	}
	bin = append(append(bin, "\x00<script>window.__pwned='binary'</script>\xff"...), 0, 1, 2)
	return []letter{
		{id: "xss-text", key: pwnKey, body: []byte(pwnText), err: pwnError,
			headers: map[string]string{"x-note": pwnHeader, pwnHeaderNm: "name breaker"}},
		{id: "xss-json", key: "k", body: []byte(pwnJSON), err: `bad "quote' <iframe src=javascript:window.__pwned=4>`},
		{id: "huge", key: "k", body: []byte(strings.Repeat(`<script>window.__pwned="huge"</script>`, 40_000)), err: pwnError},
		{id: "binary", key: "k", body: bin, err: "binary <b onmouseover=window.__pwned=5>body</b>"},
		{id: pwnID, key: "k", body: []byte("x"), err: pwnError},
	}
}

// injectedJS is true when the page holds anything a message could have
// injected: the marker, a script other than console.js, an element a
// payload carries, or an on* attribute.
const injectedJS = `(() => {
  if (typeof window.__pwned !== "undefined") return "window.__pwned = " + window.__pwned;
  const scripts = Array.from(document.scripts);
  if (scripts.length !== 1 || !scripts[0].src.endsWith("/static/console.js")) return scripts.length + " scripts";
  const el = document.querySelector("img, svg, iframe, object, embed, b");
  if (el) return "a <" + el.tagName + "> element";
  for (const e of document.querySelectorAll("*"))
    for (const a of e.attributes)
      if (a.name.startsWith("on") || a.name === "autofocus") return "attribute " + a.name + " on <" + e.tagName + ">";
  return "";
})()`

// TestBrowserHostileMessages: the groups, list, message and plan pages of
// dead letters carrying markup show it as text; nothing runs, no element
// or attribute is injected, no Content-Security-Policy violation is
// reported, and the huge and binary bodies are cut and hex-dumped. The bugs
// it catches: a value rendered as template.HTML or with its escape removed
// (in a body, a header, the key, the error, the ID or a link), a body
// shown whole.
func TestBrowserHostileMessages(t *testing.T) {
	br := openBroker(t, "mem://")
	letters := hostileLetters()
	r := newRig(t, br, "payments", "ledger", letters)
	clean := func(page string) {
		t.Helper()
		got := browsertest.Run(r.tab, chromedp.Evaluate[string](injectedJS))
		require.Empty(t, got, "injected markup on the %s page", page)
	}

	r.open("/c/payments/ledger/")
	clean("groups")
	require.Contains(t, r.texts(tid("group-pattern")), "permanent: template <script>window.__pwned=\"<q>\"</script> failed")
	require.Equal(t, 200, r.click(tid("all-messages-link")))
	clean("messages")
	links := r.attrs(tid("message-link"), "href")
	require.Len(t, links, len(letters))
	require.Contains(t, r.attrs(tid("message-row"), "data-id"), pwnID)

	byID := map[string]letter{}
	for _, l := range letters {
		byID[l.id] = l
	}
	for _, link := range links {
		r.open(link)
		id := r.text(tid("message-id"))
		l, ok := byID[id]
		require.True(t, ok, "message page %s shows ID %q", link, id)
		clean("message " + id)
		require.Equal(t, "permanent: "+l.err, r.text(tid("failure-error")), id)
		require.Equal(t, l.key, r.text(tid("message-key")), id)
		require.Equal(t, fmt.Sprint(len(l.body)), r.text(tid("body-size")), id)
		body := r.text(tid("body"))
		switch id {
		case "xss-text":
			r.tab.Shot("message-hostile")
			require.Equal(t, "text", r.text(tid("body-kind")))
			require.Equal(t, pwnText, body)
			headers := map[string]string{}
			names, values := r.texts(tid("header-name")), r.texts(tid("header-value"))
			for i := range names {
				headers[names[i]] = values[i]
			}
			require.Equal(t, pwnHeader, headers["x-note"])
			require.Equal(t, "name breaker", headers[pwnHeaderNm])
		case "xss-json":
			require.Equal(t, "json", r.text(tid("body-kind")))
			require.Contains(t, body, `"html": "</code><script>window.__pwned=\"json\"</script>"`)
		case "huge":
			require.Equal(t, "text", r.text(tid("body-kind")))
			require.NotEmpty(t, r.texts(tid("body-truncated")), "a huge body is cut")
			require.Less(t, len(body), len(l.body)/4)
			require.True(t, strings.HasPrefix(body, `<script>window.__pwned="huge"</script>`))
		case "binary":
			require.Equal(t, "binary", r.text(tid("body-kind")))
			// The dump's text column shows the markup as characters.
			require.True(t, strings.HasPrefix(body, "00000000  "), "a hex dump")
			var column strings.Builder
			for _, line := range strings.Split(body, "\n") {
				if i := strings.Index(line, "|"); i >= 0 {
					column.WriteString(strings.TrimSuffix(line[i+1:], "|"))
				}
			}
			require.Contains(t, column.String(), "<script>window.__pwned='binary'</script>", "the dump's text column")
		}
	}

	// A plan lists the IDs (the hostile one too) and carries the filter in
	// hidden fields.
	r.open("/c/payments/ledger/plan?" + url.Values{"text": {"window.__pwned"}}.Encode())
	clean("plan")
	require.Equal(t, fmt.Sprint(len(letters)), r.text(tid("plan-selected")))
	require.Contains(t, r.attrs(tid("plan-id"), "data-id"), pwnID)
	require.Empty(t, r.tab.Errors(), "console errors (a CSP violation is one)")
}

// TestBrowserCrossSiteFormRefused: a page of another site posts the
// console's redrive form, with the CSRF token of the operator's session
// (as if it leaked); the console answers 403 from its cross-origin
// protection, starts no job, moves nothing and audits nothing. The bug it
// catches: no http.CrossOriginProtection in front of the actions (the CSRF
// check alone would refuse with its own message, not this one).
func TestBrowserCrossSiteFormRefused(t *testing.T) {
	br := openBroker(t, "mem://")
	r := newRig(t, br, "payments", "ledger", flowLetters())
	r.open("/c/payments/ledger/plan")
	csrf := r.attrs(tid("redrive-form")+` input[name="csrf"]`, "value")
	require.Len(t, csrf, 1)

	// The other site: the same loopback machine under another name
	// (localhost is a different site from 127.0.0.1).
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>win a prize</title>
<form method="post" action="%s/c/payments/ledger/redrive">
<input type="hidden" name="csrf" value="%s"><input type="hidden" name="limit" value="9"><input type="hidden" name="rate" value="1000">
<button id="prize">Claim your prize</button></form>`, r.ts.URL, html.EscapeString(csrf[0]))
	}))
	defer evil.Close()
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	r.tab.Navigate(evilURL)
	require.Equal(t, http.StatusForbidden, r.click("#prize"), "the cross-site POST")
	require.Contains(t, r.text("body"), "cross-origin request detected")

	dls, err := br.DeadLetters(t.Context(), "payments", "ledger", 0)
	require.NoError(t, err)
	require.Len(t, dls, 9, "no dead letter moved")
	r.open("/jobs")
	require.NotEmpty(t, r.texts(tid("no-jobs")), "no job started")
	r.open("/audit")
	require.NotEmpty(t, r.texts(tid("no-audit")), "nothing audited")
}
