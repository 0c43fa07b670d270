package console

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"order 42 not found":                                   "order <n> not found",
		"order 42 of 'bob' failed":                             "order <n> of '<q>' failed",
		`user "amy o'neil" locked`:                             `user "<q>" locked`,
		"id 1b4e28ba-2fa1-11d2-883f-0016d3cca427 missing":      "id <uuid> missing",
		"ID 1B4E28BA-2FA1-11D2-883F-0016D3CCA427":              "ID <uuid>",
		"ptr 0xc000123abc bad":                                 "ptr <hex> bad",
		"sha deadbeef12345678 differs":                         "sha <hex> differs",
		"deadbeef is a word":                                   "deadbeef is a word",
		"can't decode p4 at 1.5s":                              "can't decode p<n> at <n>.<n>s",
		"timeout after 30s talking to 10.0.0.7:5432":           "timeout after <n>s talking to <n>.<n>.<n>.<n>:<n>",
		"unclosed 'quote":                                      "unclosed 'quote",
		"":                                                     "",
		"downstream said no to p4; retry in `2s`":              "downstream said no to p<n>; retry in `<q>`",
		"1b4e28ba-2fa1-11d2-883f-0016d3cca4270 is not a UUID":  "<hex>-<n>fa<n>-<n>d<n>-<n>f-<hex> is not a UUID",
		"<script>alert(1)</script> at 2026-12-03T15:00:00Z ok": "<script>alert(<n>)</script> at <n>-<n>-<n>T<n>:<n>:<n>Z ok",
	} {
		require.Equal(t, want, Normalize(in), "Normalize(%q)", in)
	}
}

const panicStack = `goroutine 7 [running]:
runtime/debug.Stack()
	/usr/lib/go/src/runtime/debug/stack.go:26 +0x5e
github.com/oncely/oncely/consumer.(*Consumer).handle.func1()
	/src/consumer/recover.go:29 +0x65
panic({0x6b1d40?, 0xc0001a2f70?})
	/usr/lib/go/src/runtime/panic.go:792 +0x132
github.com/acme/ledger.(*Handler).apply(0xc000010000, {0x7f, 0x1})
	/src/ledger/handler.go:42 +0x1b
github.com/acme/ledger.(*Handler).Handle(0xc000010000)
	/src/ledger/handler.go:20 +0x2c
`

func TestFirstFrame(t *testing.T) {
	require.Equal(t, "github.com/acme/ledger.(*Handler).apply", FirstFrame(panicStack))
	require.Equal(t, "main.f", FirstFrame("goroutine 1 [running]:\nruntime/debug.Stack()\n\t/x.go:1\nmain.f(...)\n\t/m.go:3\n"))
	require.Empty(t, FirstFrame(""))
	require.Empty(t, FirstFrame("not a stack"+"\n\tat nothing"))
}

func dead(id, reason, typ, errText, stack string, at time.Time) adapters.DeadLetter {
	return adapters.DeadLetter{Copies: 1, Message: &consumer.Message{ID: id, Headers: map[string]string{
		consumer.HeaderDeadLetterReason: reason, consumer.HeaderErrorType: typ, consumer.HeaderError: errText,
		consumer.HeaderStack: stack, consumer.HeaderFailedAt: at.UTC().Format(time.RFC3339Nano)}}}
}

// Grouping counts message IDs per fingerprint, keeps first and last seen,
// and tells apart what differs in reason, type, pattern or frame. The bug
// it catches: grouping by the raw error text (one group per order number)
// or by the pattern alone (reasons mixed).
func TestGroupLetters(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	dls := []adapters.DeadLetter{
		dead("a", "permanent", "*errors.errorString", "order 1 not found", "", t0.Add(2*time.Hour)),
		dead("b", "permanent", "*errors.errorString", "order 2 not found", "", t0),
		dead("c", "permanent", "*errors.errorString", "order 3 not found", "", t0.Add(time.Hour)),
		dead("d", "exhausted", "*errors.errorString", "order 4 not found", "", t0),
		dead("e", "panic", "panic", "panic: boom 1", panicStack, t0),
		dead("f", "panic", "panic", "panic: boom 2", "goroutine 1 [running]:\nmain.other()\n", t0),
		dead("g", "permanent", "*net.OpError", "order 5 not found", "", t0),
	}
	dls[0].Copies = 2
	gs := GroupLetters(dls, t0)
	require.Len(t, gs, 5)
	g := gs[0]
	require.Equal(t, 3, g.Count)
	require.Equal(t, 4, g.Copies)
	require.Equal(t, "order <n> not found", g.Pattern)
	require.Equal(t, "permanent", g.Reason)
	require.Equal(t, t0, g.FirstSeen)
	require.Equal(t, t0.Add(2*time.Hour), g.LastSeen)
	require.Equal(t, "order 1 not found", g.Example)
	frames := map[string]bool{}
	for _, g := range gs[1:] {
		require.Equal(t, 1, g.Count)
		frames[g.Frame] = true
	}
	require.True(t, frames["github.com/acme/ledger.(*Handler).apply"] && frames["main.other"])
	// The group filter selects exactly the group.
	f, err := ParseFilter(map[string][]string{"group": {g.ID}})
	require.NoError(t, err)
	var ids []string
	for _, d := range f.Select(dls) {
		ids = append(ids, d.Message.ID)
	}
	require.Equal(t, []string{"a", "b", "c"}, ids)
}

func TestFilter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	dls := []adapters.DeadLetter{
		dead("a", "permanent", "", "order 1 not found", "", t0),
		dead("b", "exhausted", "", "Downstream timeout", "", t0.Add(time.Hour)),
		dead("c", "exhausted", "", "order 3 not found", "", t0.Add(2*time.Hour)),
	}
	dls[2].Message.Body = []byte(`{"customer":"ZOE"}`)
	sel := func(q map[string][]string) string {
		f, err := ParseFilter(q)
		require.NoError(t, err)
		var ids string
		for _, d := range f.Select(dls) {
			ids += d.Message.ID
		}
		return ids
	}
	require.Equal(t, "abc", sel(nil))
	require.Equal(t, "bc", sel(map[string][]string{"reason": {"exhausted"}}))
	require.Equal(t, "b", sel(map[string][]string{"text": {"downstream TIMEOUT"}}))
	require.Equal(t, "c", sel(map[string][]string{"text": {"zoe"}}))
	require.Equal(t, "b", sel(map[string][]string{"since": {"2026-12-01T11:00"}, "until": {"2026-12-01T12:00:00Z"}}))
	require.Equal(t, "c", sel(map[string][]string{"reason": {"exhausted"}, "text": {"order"}}))
	require.Equal(t, "a", sel(map[string][]string{"id": {"a"}}))
	_, err := ParseFilter(map[string][]string{"reason": {"tired"}, "since": {"yesterday"}, "until": {"2026-01-01"}})
	require.ErrorContains(t, err, `unknown reason "tired"`)
	require.ErrorContains(t, err, `since: "yesterday" is not a time`)
	// Values round-trips.
	f, err := ParseFilter(map[string][]string{"reason": {"exhausted"}, "since": {"2026-12-01T11:00"}, "text": {"x y"}})
	require.NoError(t, err)
	g, err := ParseFilter(f.Values())
	require.NoError(t, err)
	require.Equal(t, f.Values(), g.Values())
	require.Equal(t, "all", Filter{}.String())
}

// BenchmarkGroup100k groups 100,000 dead letters by fingerprint and, in the
// same process, two baselines: grouping by the raw error text in a
// hand-written loop (the least any grouping costs) and normalising with
// regular expressions (the obvious way to write Normalize). It reports
// both ratios. Run with
// go test -run X -bench Group100k -benchtime 5x ./internal/console/.
func BenchmarkGroup100k(b *testing.B) {
	t0 := time.Now()
	dls := make([]adapters.DeadLetter, 100_000)
	for i := range dls {
		dls[i] = dead(fmt.Sprint(i), "exhausted", "*fmt.wrapError",
			fmt.Sprintf("payment %d of customer 'c-%d' failed: upstream 6fa459ea-ee8a-3ca4-894e-db77e160355e said 503 after %dms", i, i%977, i%300),
			"", t0.Add(time.Duration(i)*time.Millisecond))
	}
	res := []*regexp.Regexp{
		regexp.MustCompile(`'[^']*'|"[^"]*"|` + "`[^`]*`"),
		regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`),
		regexp.MustCompile(`\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]*[0-9][0-9a-fA-F]*\b`),
		regexp.MustCompile(`[0-9]+`),
	}
	repl := []string{"<q>", "<uuid>", "<hex>", "<n>"}
	var raw, re, fp time.Duration
	for b.Loop() {
		start := time.Now()
		m := map[string]int{}
		for _, d := range dls {
			m[d.Error()]++
		}
		raw += time.Since(start)

		start = time.Now()
		m = map[string]int{}
		for _, d := range dls {
			s := d.Error()
			for i, r := range res {
				s = r.ReplaceAllString(s, repl[i])
			}
			m[s]++
		}
		re += time.Since(start)

		start = time.Now()
		if gs := GroupLetters(dls, time.Now()); len(gs) != 1 {
			b.Fatalf("%d groups, want 1", len(gs))
		}
		fp += time.Since(start)
	}
	b.ReportMetric(float64(fp)/float64(raw), "fingerprint/raw")
	b.ReportMetric(float64(re)/float64(fp), "regexp/fingerprint")
	b.ReportMetric(float64(fp.Nanoseconds())/float64(b.N)/1e6, "ms/100k")
}
