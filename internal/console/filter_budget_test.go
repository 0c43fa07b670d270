package console

import (
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A filtered page stops filtering when Config.FilterBudget runs out and
// says it is partial, with how many dead letters it scanned of those it
// read; within the budget it scans them all and says nothing. The clock
// moves one second each time it is read: with a budget of 2.5 s the
// filter scans two dead letters. The bug it catches: a text filter with
// no time budget, which reads every body however long it takes.
func TestFilterStopsAtItsTimeBudget(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	var letters []letter
	for i := range 10 {
		letters = append(letters, letter{id: fmt.Sprintf("m%d", i), body: []byte("holds the needle"), err: "e"})
	}
	seed(t, br, source, name, letters, len(letters))
	var ticks atomic.Int64
	start := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	f := newFixture(t, br, func(c *Config) {
		c.FilterBudget = 2500 * time.Millisecond
		c.Now = func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) }
	})
	query := "?" + url.Values{"text": {"needle"}}.Encode()
	for _, page := range []string{"", "messages"} {
		body := f.page(consumerURL(source, name) + page + query)
		require.Equal(t, []string{"2"}, testids(body, "selected-count"), page)
		require.Equal(t, []string{"2"}, testids(body, "filter-scanned"), page)
		require.Equal(t, []string{"10"}, testids(body, "filter-read"), page)
		require.Contains(t, body, "Partial: the filter ran out of its time budget (2.5s, --filter-budget)", page)
		require.Contains(t, body, "refine the filter", page)
	}

	whole := newFixture(t, br, func(c *Config) { c.Now = func() time.Time { return start } })
	body := whole.page(consumerURL(source, name) + "messages" + query)
	require.Equal(t, []string{"10"}, testids(body, "selected-count"))
	require.NotContains(t, body, `data-testid="filter-partial"`)
	require.Contains(t, body, "of 10 dead letters match")
}
