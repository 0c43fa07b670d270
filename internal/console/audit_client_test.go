package console

import (
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every audit row names the client address (behind a trusted proxy, the
// forwarded client) and a reference to the session that acted, which is
// not the session's ID. The bug it catches: rows that say only the user,
// the same for every holder of a token and every address.
func TestAuditRecordsClientAndSession(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{{id: "m1", err: "e"}, {id: "m2", err: "e"}, {id: "m3", err: "e"}}, 3)
	f := newFixture(t, br, func(c *Config) {
		c.Tokens = map[string]string{testToken: "bob"}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	base := consumerURL(source, name)
	require.Equal(t, http.StatusSeeOther, f.post("/login", url.Values{"token": {testToken}}, "X-Forwarded-For", "203.0.113.9").StatusCode)
	session, _, ok := f.sessionOf()
	require.True(t, ok)
	ref := f.srv.sessions.ref(session)
	require.Len(t, ref, 16)
	require.NotContains(t, session, ref)

	require.Equal(t, http.StatusOK, f.post(base+"delete", url.Values{"id": {"m1"}, "limit": {"1"}, "confirm": {ConfirmWord}},
		"X-Forwarded-For", "198.51.100.1, 203.0.113.9").StatusCode)
	require.Equal(t, http.StatusOK, f.post(base+"delete", url.Values{"id": {"m2"}, "limit": {"1"}, "confirm": {ConfirmWord}}).StatusCode)
	resp := f.post(base+"redrive", url.Values{"id": {"m3"}, "limit": {"1"}, "rate": {"100"}}, "X-Forwarded-For", "192.0.2.44")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	job := f.srv.job(resp.Header.Get("Location")[len("/jobs/"):])
	require.NotNil(t, job)
	<-job.done

	rows, err := f.srv.audit.latest(t.Context(), 10)
	require.NoError(t, err)
	require.Len(t, rows, 4)
	type from struct{ action, actor, client, session string }
	var got []from
	for _, r := range rows {
		got = append(got, from{r.Action, r.Actor, r.Client, r.Session})
	}
	require.Equal(t, []from{
		{actionRedriveEnd, "bob", "192.0.2.44", ref},
		{actionRedriveStart, "bob", "192.0.2.44", ref},
		{actionDelete, "bob", "127.0.0.1", ref},
		{actionDelete, "bob", "203.0.113.9", ref},
	}, got)
	body := f.page("/audit")
	require.Equal(t, []string{"192.0.2.44", "192.0.2.44", "127.0.0.1", "203.0.113.9"}, testids(body, "audit-client"))
	require.Equal(t, []string{ref, ref, ref, ref}, testids(body, "audit-session"))
	require.NotContains(t, body, session)
}
