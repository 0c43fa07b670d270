package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, adapters.RedriveOptions{})
	p.update(adapters.RedriveProgress{Seen: 1, Total: 10, Redriven: 1})
	p.finish()
	require.Empty(t, b.String(), "runs shorter than a second print nothing")

	p = newProgress(&b, adapters.RedriveOptions{})
	p.start = time.Now().Add(-2 * time.Second)
	p.update(adapters.RedriveProgress{Seen: 5, Total: 10, Redriven: 4, DuplicateCopies: 1})
	p.update(adapters.RedriveProgress{Seen: 6, Total: 10, Redriven: 5, DuplicateCopies: 1}) // within 200ms: not printed
	p.latest = adapters.RedriveProgress{Seen: 10, Total: 10, Redriven: 8, DuplicateCopies: 2}
	p.finish()
	lines := strings.Split(b.String(), "\r")
	require.Len(t, lines, 3)
	require.Regexp(t, `^\[#{15}\.{15}\] looked at 5/10 dead letters: 4 redriven, 1 extra copies of redriven IDs \(\d+/s\)$`, lines[1])
	require.Regexp(t, `^\[#{30}\] looked at 10/10 dead letters: 8 redriven, 2 extra copies of redriven IDs \(\d+/s\)\n$`, lines[2])

	b.Reset()
	p = newProgress(&b, adapters.RedriveOptions{DryRun: true})
	p.start = time.Now().Add(-2 * time.Second)
	p.update(adapters.RedriveProgress{Seen: 3, Total: -1, Redriven: 3})
	require.Regexp(t, `^\rlooked at 3 dead letters: 3 would be redriven \(\d+/s\)$`, b.String())
}

// TestProgressCountsTheSelection: with a filter, the line tells the
// selection (redriven so far, out of --limit when given) from the dead
// letters looked at, so "3/3 2 redriven" cannot be read as two thirds of
// the selection done.
func TestProgressCountsTheSelection(t *testing.T) {
	elapsed := 2 * time.Second
	p := newProgress(&bytes.Buffer{}, adapters.RedriveOptions{Reason: consumer.ReasonExhausted})
	require.Equal(t, "[##############################] looked at 3/3 dead letters: 2 selected and redriven, 1 not selected (1/s)",
		p.line(adapters.RedriveProgress{Seen: 3, Total: 3, Redriven: 2, Skipped: 1}, elapsed))

	p = newProgress(&bytes.Buffer{}, adapters.RedriveOptions{ErrorContains: "timeout", Limit: 5, DryRun: true})
	require.Equal(t, "[###############...............] looked at 4/8 dead letters: 2/5 (--limit) selected and would be redriven, 2 not selected (1/s)",
		p.line(adapters.RedriveProgress{Seen: 4, Total: 8, Redriven: 2, Skipped: 2}, elapsed))

	p = newProgress(&bytes.Buffer{}, adapters.RedriveOptions{ID: "m-7"})
	require.Equal(t, "looked at 40 dead letters: 1 selected and redriven, 39 not selected (0/s)",
		p.line(adapters.RedriveProgress{Seen: 40, Total: -1, Redriven: 1, Skipped: 39}, 3*time.Second))
}
