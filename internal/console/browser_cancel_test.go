package console_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/internal/browsertest"
	"github.com/oncely/oncely/internal/console"
)

// TestBrowserCancelRedrive: a redrive of the nine at 1/s is cancelled from
// its progress page once it has moved some; the page ends "cancelled by
// alice" with the count it reached, exactly that many messages are back on
// the source (once each) and the rest are still dead letters, and the
// audit has the start, the cancel and the end. The bugs it catches: a
// cancel that does not stop the job (all nine move), one that stops it
// without saying so (status done), a count on the page that is not what
// moved, a cancel not audited.
func TestBrowserCancelRedrive(t *testing.T) {
	br := openBroker(t, "mem://")
	r := newRig(t, br, "payments", "ledger", flowLetters())
	r.open("/c/payments/ledger/plan")
	require.Equal(t, "9", r.text(tid("plan-selected")))
	r.tab.Do(chromedp.SetValue(chromedp.CSS(tid("redrive-rate")), "1"))
	require.Equal(t, 200, r.click(tid("redrive-submit")))
	browsertest.Poll(r.tab, jobViewJS, func(v jobView) bool {
		n, _ := strconv.Atoi(v.Redriven)
		return v.Status == "running" && n >= 1
	})
	require.Equal(t, 200, r.click(tid("job-cancel")))
	end := browsertest.Poll(r.tab, jobViewJS, func(v jobView) bool { return v.Status != "" && v.Status != "running" })
	require.Equal(t, "cancelled", end.Status)
	require.Equal(t, "alice", r.text(tid("job-cancelled-by")))
	moved, err := strconv.Atoi(end.Redriven)
	require.NoError(t, err)
	require.True(t, moved >= 1 && moved < 9, "cancelled after %d of 9", moved)

	src, err := br.Source(t.Context(), "payments", "ledger")
	require.NoError(t, err)
	var back []string
	for _, d := range adaptertest.ReceiveN(t, src, moved, adaptertest.WaitTimeout) {
		back = append(back, d.Message().ID)
		require.NoError(t, d.Ack(t.Context()))
	}
	adaptertest.AssertQuiet(t, src, adaptertest.QuietWindow)
	require.NoError(t, src.Close(t.Context()))
	dls, err := br.DeadLetters(t.Context(), "payments", "ledger", 0)
	require.NoError(t, err)
	var left []string
	for _, d := range dls {
		left = append(left, d.Message.ID)
	}
	var all []string
	for _, l := range flowLetters() {
		all = append(all, l.id)
	}
	require.Equal(t, sorted(all), sorted(append(back, left...)), "each message either back once or still dead-lettered")
	require.Len(t, slices.Compact(sorted(back)), moved, "no message back twice")

	require.Equal(t, 200, r.click(tid("nav-audit")))
	require.ElementsMatch(t, []string{"redrive.start", "redrive.cancel", "redrive.end"}, r.attrs(tid("audit-row"), "data-action"))
	require.Contains(t, r.text(tid(`[data-testid="audit-row"][data-action="redrive.end"]`, "audit-outcome")), "cancelled")
	require.Empty(t, r.tab.Errors(), "console errors")
}

// TestBrowserReadOnly: with Config.ReadOnly the pages say so and offer no
// action (no redrive or delete form), and a redrive POST from the page
// itself is refused with 403 as read-only. The bug it catches: read-only
// that only hides the buttons.
func TestBrowserReadOnly(t *testing.T) {
	br := openBroker(t, "mem://")
	r := newRig(t, br, "payments", "ledger", flowLetters(), func(c *console.Config) { c.ReadOnly = true })
	r.open("/c/payments/ledger/plan")
	require.NotEmpty(t, r.texts(tid("read-only-badge")))
	require.NotEmpty(t, r.texts(tid("read-only-note")))
	require.Empty(t, r.texts(tid("redrive-form")))
	require.Empty(t, r.texts(tid("delete-form")))

	// The page posts the form a writable console would show. Read-only
	// pages carry no CSRF token, so the answer must be the read-only
	// refusal, which comes first, not the CSRF check's.
	got := browsertest.Run(r.tab, chromedp.Evaluate[string](`(async () => {
  const body = new URLSearchParams({csrf: "x", limit: "9", rate: "1000"});
  const resp = await fetch("/c/payments/ledger/redrive", {method: "POST", body});
  const page = new DOMParser().parseFromString(await resp.text(), "text/html");
  const msg = page.querySelector('[data-testid="error-message"]');
  return resp.status + " " + (msg ? msg.textContent.trim() : "(no error message)");
})()`, chromedp.EvalAwaitPromise))
	require.True(t, strings.HasPrefix(got, "403 "), "a redrive POST to a read-only console: %.200s", got)
	require.Contains(t, got, "read-only", "the refusal is the read-only one")
	dls, err := br.DeadLetters(t.Context(), "payments", "ledger", 0)
	require.NoError(t, err)
	require.Len(t, dls, 9, "nothing moved")
}
