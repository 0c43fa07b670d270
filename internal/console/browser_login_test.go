package console_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/browsertest"
	"github.com/oncely/oncely/internal/console"
)

// TestBrowserTokenLogin: with Config.Tokens every page sends the browser to
// the login form first and back to the page asked for after it; a wrong
// token is refused; the session cookie is out of the page's scripts'
// reach (HttpOnly); what the session does is audited under the token's
// name; after logging out the pages ask for the token again. The bugs it
// catches: a page served before login, a lost "next", an actor taken
// from Config.User instead of the token, a session that survives logout.
func TestBrowserTokenLogin(t *testing.T) {
	const token = "s3cret-token-of-bob-0123"
	br := openBroker(t, "mem://")
	r := newRig(t, br, "payments", "ledger", flowLetters(), func(c *console.Config) {
		c.Tokens = map[string]string{token: "bob"}
	})

	r.open("/c/payments/ledger/")
	require.NotEmpty(t, r.texts(tid("login-form")), "the login form comes first")
	require.Empty(t, r.texts(tid("groups-table")))
	r.tab.Do(chromedp.SendKeys(chromedp.CSS(tid("login-token")), "not-the-token-at-all"))
	require.Equal(t, http.StatusUnauthorized, r.click(tid("login-submit")))
	require.Equal(t, "wrong token", r.text(tid("login-error")))

	r.tab.Do(chromedp.SendKeys(chromedp.CSS(tid("login-token")), token))
	require.Equal(t, 200, r.click(tid("login-submit")))
	require.Equal(t, "ledger", r.text(tid("consumer-name")), "back on the page asked for")
	require.Equal(t, "bob", r.text(tid("user")))
	require.Empty(t, browsertest.Run(r.tab, chromedp.Evaluate[string](`document.cookie`)), "the session cookie is HttpOnly")

	// Redrive the one-message group; the audit names bob.
	row := `[data-testid="group-row"]:nth-child(3)`
	require.Equal(t, []string{"1"}, r.texts(tid(row, "group-count")))
	require.Equal(t, 200, r.click(tid(row, "group-plan")))
	r.tab.Do(chromedp.SetValue(chromedp.CSS(tid("redrive-rate")), "100"))
	require.Equal(t, 200, r.click(tid("redrive-submit")))
	end := browsertest.Poll(r.tab, jobViewJS, func(v jobView) bool { return v.Status != "" && v.Status != "running" })
	require.Equal(t, jobView{Status: "done", Redriven: "1", Limit: "1"}, end)
	require.Equal(t, 200, r.click(tid("nav-audit")))
	require.Equal(t, []string{"bob", "bob"}, r.texts(tid("audit-row", "audit-actor")))

	require.Equal(t, 200, r.click(tid("logout")))
	require.NotEmpty(t, r.texts(tid("login-form")))
	r.open("/audit")
	require.NotEmpty(t, r.texts(tid("login-form")), "logged out: the login form again")
	require.Empty(t, r.texts(tid("audit-table")))
	// The one console error is the browser reporting the wrong token's 401.
	require.Len(t, r.tab.Errors(), 1, "console errors")
	require.Contains(t, r.tab.Errors()[0], "401")
}
