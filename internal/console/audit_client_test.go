package console

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
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

// A delete's and a redrive's audit rows list the message IDs they took.
// The bug it catches: rows with counts only, which cannot say which
// messages went.
func TestAuditRecordsMessageIDs(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{{id: "a1", err: "bulk"}, {id: "a2", err: "bulk"}, {id: "a3", err: "bulk"},
		{id: "r1", err: "again"}, {id: "r2", err: "again"}, {id: "keep", err: "other"}}, 6)
	f := newFixture(t, br, nil)
	base := consumerURL(source, name)
	require.Equal(t, http.StatusOK, f.post(base+"delete", url.Values{"text": {"bulk"}, "limit": {"3"}, "confirm": {ConfirmWord}}).StatusCode)
	resp := f.post(base+"redrive", url.Values{"text": {"again"}, "limit": {"2"}, "rate": {"100"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	job := f.srv.job(resp.Header.Get("Location")[len("/jobs/"):])
	require.NotNil(t, job)
	<-job.done

	rows, err := f.srv.audit.latest(t.Context(), 10)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	require.Equal(t, actionRedriveEnd, rows[0].Action)
	require.ElementsMatch(t, []string{"r1", "r2"}, rows[0].MessageIDs)
	require.Empty(t, rows[1].MessageIDs, "the start row: nothing taken yet")
	require.Equal(t, actionDelete, rows[2].Action)
	require.ElementsMatch(t, []string{"a1", "a2", "a3"}, rows[2].MessageIDs)
	require.ElementsMatch(t, []string{"r1", "r2", "a1", "a2", "a3"}, testids(f.page("/audit"), "audit-id"))

}

// A redrive or delete of more message IDs than the audit row holds
// records every one, in order: the row the first ones, the
// console_audit_messages table the rest, in the same transaction; the
// audit page counts them all and pages through them. The bug it catches:
// an audit that keeps the first 10,000 IDs and only counts the others.
func TestAuditRecordsEveryIDOfALargeSelection(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	var letters []letter
	for i := range 8 {
		letters = append(letters, letter{id: fmt.Sprintf("big-%d", i), err: "e"})
	}
	seed(t, br, source, name, letters, len(letters))
	f := newFixture(t, br, nil)
	f.srv.audit.inline = 3 // a lowered cap: the row holds 3, the table 5
	resp := f.post(consumerURL(source, name)+"redrive", url.Values{"limit": {"8"}, "rate": {"1000"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	job := f.srv.job(resp.Header.Get("Location")[len("/jobs/"):])
	require.NotNil(t, job)
	<-job.done
	rows, err := f.srv.audit.latest(t.Context(), 1)
	require.NoError(t, err)
	require.Equal(t, actionRedriveEnd, rows[0].Action)
	require.Equal(t, 8, rows[0].Counts["redriven"])
	require.Equal(t, 8, rows[0].MessageCount)
	all, more, err := f.srv.audit.messageIDs(t.Context(), rows[0].ID, 0, 100)
	require.NoError(t, err)
	require.False(t, more)
	var want []string
	for _, l := range letters {
		want = append(want, l.id)
	}
	require.ElementsMatch(t, want, all)
	require.Equal(t, []string{"8"}, testids(f.page(fmt.Sprintf("/audit/%d", rows[0].ID)), "audit-id-count"))
	require.ElementsMatch(t, want, testids(f.page(fmt.Sprintf("/audit/%d", rows[0].ID)), "audit-id"))

	// At the real cap: maxAuditIDs+7 IDs, paged auditIDsPage at a time.
	f.srv.audit.inline = maxAuditIDs
	ids := make([]string, maxAuditIDs+7)
	for i := range ids {
		ids[i] = fmt.Sprintf("id-%05d", i)
	}
	id, err := f.srv.audit.write(t.Context(), AuditEntry{Actor: "ann", Action: actionDelete, Source: source, Consumer: name,
		Selection: "all", Outcome: "done", MessageIDs: ids})
	require.NoError(t, err)
	e, ok, err := f.srv.audit.entry(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, maxAuditIDs+7, e.MessageCount)
	require.Equal(t, ids[:auditPreviewIDs], e.MessageIDs)
	var read []string
	next, pages := fmt.Sprintf("/audit/%d", id), 0
	for next != "" {
		body := f.page(next)
		pages++
		read = append(read, testids(body, "audit-id")...)
		next = ""
		if m := regexp.MustCompile(`data-testid="audit-ids-next" href="([^"]+)"`).FindStringSubmatch(body); m != nil {
			next = htmlUnescape(m[1])
		}
	}
	require.Equal(t, ids, read, "every ID, in order, across the pages")
	require.Equal(t, (maxAuditIDs+7+auditIDsPage-1)/auditIDsPage, pages)
	body := f.page("/audit")
	require.Contains(t, testids(body, "audit-id-count"), fmt.Sprint(maxAuditIDs+7))
	require.Contains(t, body, fmt.Sprintf(`href="/audit/%d"`, id))
}
