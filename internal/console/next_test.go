package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileNexts leave the site in some browser, or smuggle a control
// character; each must become "/".
var hostileNexts = []string{
	"/\t/evil.example/x", "/\n/evil.example", "/\r\n/evil.example", "/\x00/evil.example", "/\x0b/evil", "/\x7f/evil",
	"/%09/evil.example/x", "/%0a/evil.example", "/%0D%0A/evil", "/%00/evil",
	"//evil.example", "//evil.example/x", "///evil.example", "/\\evil.example", "/\\/evil.example", "\\\\evil.example",
	"\\/evil.example", "/%2F/evil.example", "/%2f%2fevil.example", "/%5Cevil.example", "/%5c%5cevil.example",
	"/a\\..\\..\\evil.example", "/ok%5C..%5Cevil",
	"https://evil.example", "http://evil.example/", "HTTPS://evil.example", "https:evil.example", "//user@evil.example",
	"javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<script>", "mailto:x@evil.example",
	"evil.example", "evil.example/x", "./x", "../x", "", " /x", " //evil.example", "\t//evil.example",
	"/x\u0085y", "/x?y=\x01", "/x#\t", "/x?%0a", "/%ZZ", "/\xff/evil",
}

// safeNexts are this site's paths, kept as they are.
var safeNexts = []string{
	"/", "/jobs", "/jobs/abc", "/c/payments/ledger/", "/c/payments/ledger/messages?reason=panic&text=order+42",
	"/c/a%2Fb/c/message?id=m%2F1", "/c/p/c/messages?text=%5Cn", "/audit#top", "/x?next=//evil.example",
}

func TestSafeNext(t *testing.T) {
	for _, n := range hostileNexts {
		require.Equal(t, "/", safeNext(n), "next %q", n)
	}
	for _, n := range safeNexts {
		require.Equal(t, n, safeNext(n), "next %q", n)
	}
}

// After a login every hostile next= sends the browser to "/", from the
// form and from the login page's link. The bug it catches: a check on the
// first characters only, which lets "/\t/evil.example" through.
func TestLoginRedirectStaysOnSite(t *testing.T) {
	f := newFixture(t, memBroker(t), func(c *Config) { c.Tokens = map[string]string{testToken: "bob"} })
	for _, n := range hostileNexts {
		require.Equal(t, "/", loginLocation(t, f, n), "next %q", n)
		_, body := f.get("/login?next=" + url.QueryEscape(n))
		require.Contains(t, body, `name="next" value="/"`, "next %q", n)
	}
	require.Equal(t, "/jobs/abc", loginLocation(t, f, "/jobs/abc"))
}

// loginLocation logs in with next and returns the raw Location header
// (an http.Client would refuse to parse a hostile one).
func loginLocation(t *testing.T, f *fixture, next string) string {
	t.Helper()
	form := url.Values{"token": {testToken}, "next": {next}}
	req, err := http.NewRequest(http.MethodPost, f.ts.URL+"/login", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := f.ts.Client().Transport.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "next %q", next)
	return resp.Header.Get("Location")
}
