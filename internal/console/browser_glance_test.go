package console_test

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/browsertest"
	"github.com/oncely/oncely/internal/console"
)

// glanceAhead is how far the flow's console clock (Config.Now) runs ahead
// of the wall clock: the letters, dead-lettered seconds before, are then
// "1 h ago", none in the last hour and all in the last day, whatever the
// broker's speed.
const glanceAhead = 90 * time.Minute

// aheadClock makes the console's clock run glanceAhead ahead.
func aheadClock(c *console.Config) {
	c.Now = func() time.Time { return time.Now().Add(glanceAhead) }
}

var exactUTC = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$`)

// fontPx is the computed font size of the one element matching sel.
func (r *rig) fontPx(sel string) float64 {
	r.t.Helper()
	px := browsertest.Run(r.tab, chromedp.Evaluate[string](
		`getComputedStyle(document.querySelector(`+strconv.Quote(sel)+`)).fontSize`))
	f, err := strconv.ParseFloat(strings.TrimSuffix(px, "px"), 64)
	require.NoError(r.t, err, "font size %q of %s", px, sel)
	return f
}

// before reports whether the first element matching a precedes the first
// matching b in the document.
func (r *rig) before(a, b string) bool {
	r.t.Helper()
	return browsertest.Run(r.tab, chromedp.Evaluate[bool](`!!(document.querySelector(`+strconv.Quote(a)+
		`).compareDocumentPosition(document.querySelector(`+strconv.Quote(b)+`)) & Node.DOCUMENT_POSITION_FOLLOWING)`))
}

// checkGlanceOverview: the dead-letter depth, total and per consumer, is
// the page's largest number, marked as an alert.
func checkGlanceOverview(r *rig, row string, depth string) {
	r.t.Helper()
	require.Equal(r.t, depth, r.text(tid("dlq-depth-total")))
	require.GreaterOrEqual(r.t, r.fontPx(tid("dlq-depth-total")), 2*r.fontPx(tid(row, "lag")), "the total depth is not emphasised")
	require.Greater(r.t, r.fontPx(tid(row, "dlq-depth")), r.fontPx(tid(row, "lag")), "the depth is not emphasised")
	require.Len(r.t, r.texts(row+` td.depth.alert [data-testid="dlq-depth"]`), 1, "a non-empty dead-letter queue is an alert")
}

// checkGlanceGroups: each group's trend and ages by the console's clock,
// the exact UTC time in the title.
func checkGlanceGroups(r *rig, counts []string) {
	r.t.Helper()
	zeros := make([]string, len(counts))
	hours := make([]string, len(counts))
	for i := range counts {
		zeros[i], hours[i] = "0", "1 h ago"
	}
	require.Equal(r.t, zeros, r.texts(tid("group-row", "group-last-hour")))
	require.Equal(r.t, counts, r.texts(tid("group-row", "group-last-day")))
	require.Equal(r.t, hours, r.texts(tid("group-row", "group-last-seen")))
	require.Equal(r.t, hours, r.texts(tid("group-row", "group-first-seen")))
	for _, title := range r.attrs(tid("group-row", "group-last-seen"), "title") {
		require.Regexp(r.t, exactUTC, title)
	}
}

// checkGlanceMessage: reason, attempts, age, the user's error type and the
// reason's next step come first, then the body, then the headers.
func checkGlanceMessage(r *rig) {
	r.t.Helper()
	require.Equal(r.t, "permanent", r.text(tid("failure-reason")))
	require.Equal(r.t, "1", r.text(tid("failure-attempts")))
	require.Equal(r.t, "1 h ago", r.text(tid("failure-age")))
	require.Regexp(r.t, exactUTC, r.attrs(tid("failure-age"), "title")[0])
	// The seed's handler fails with fmt.Errorf without %w: no type of the
	// user's, so none recorded (not *errors.errorString).
	require.Equal(r.t, "-", r.text(tid("failure-error-type")))
	require.Equal(r.t, []string{"permanent"}, r.attrs(tid("next-step"), "data-reason"))
	require.True(r.t, strings.HasPrefix(r.text(tid("next-step")), "Next step: The handler refused this message for good"), r.text(tid("next-step")))
	for _, pair := range [][2]string{{"failure-attempts", "body"}, {"next-step", "body"}, {"body", "headers-table"}, {"body", "failure-context"}} {
		require.True(r.t, r.before(tid(pair[0]), tid(pair[1])), "%s is not above %s", pair[0], pair[1])
	}
}
