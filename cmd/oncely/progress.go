package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/oncely/oncely/adapters"
)

// progress prints a redrive's progress on one updated stderr line, at most
// every 200ms, once the run has lasted a second (short runs print nothing).
// The line names what each number counts: the bar and "looked at n/total"
// count the dead-letter destination, "redriven" counts the selection so far
// (out of --limit when one is given), and with a filter the letters it left
// in place are counted apart.
type progress struct {
	w        io.Writer
	dry      bool
	filtered bool // a filter (--reason, --error, --id) selects part of the destination
	limit    int  // --limit, 0 for none
	start    time.Time
	mu       sync.Mutex
	last     time.Time
	latest   adapters.RedriveProgress
	shown    bool
}

// newProgress returns the progress line of a redrive run with opts.
func newProgress(w io.Writer, opts adapters.RedriveOptions) *progress {
	filtered := opts.Reason != "" || opts.ErrorContains != "" || opts.ID != "" || opts.Match != nil
	return &progress{w: w, dry: opts.DryRun, filtered: filtered, limit: opts.Limit, start: time.Now()}
}

func (p *progress) update(r adapters.RedriveProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest = r
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	p.printLocked(now)
}

func (p *progress) printLocked(now time.Time) {
	fmt.Fprintf(p.w, "\r%s", p.line(p.latest, now.Sub(p.start)))
	p.shown = true
}

// line is the progress line for r after elapsed, such as
// "[###...] looked at 3/3 dead letters: 2 selected and redriven, 1 not selected (2/s)".
func (p *progress) line(r adapters.RedriveProgress, elapsed time.Duration) string {
	var b strings.Builder
	if r.Total > 0 {
		const width = 30
		filled := min(width, r.Seen*width/r.Total)
		fmt.Fprintf(&b, "[%s%s] looked at %d/%d dead letters: ", strings.Repeat("#", filled), strings.Repeat(".", width-filled), r.Seen, r.Total)
	} else {
		fmt.Fprintf(&b, "looked at %d dead letters: ", r.Seen)
	}
	verb := "redriven"
	if p.dry {
		verb = "would be redriven"
	}
	if p.filtered {
		verb = "selected and " + verb
	}
	if p.limit > 0 {
		fmt.Fprintf(&b, "%d/%d (--limit) %s", r.Redriven, p.limit, verb)
	} else {
		fmt.Fprintf(&b, "%d %s", r.Redriven, verb)
	}
	if p.filtered {
		fmt.Fprintf(&b, ", %d not selected", r.Skipped)
	}
	if r.DuplicateCopies > 0 {
		fmt.Fprintf(&b, ", %d extra copies of redriven IDs", r.DuplicateCopies)
	}
	fmt.Fprintf(&b, " (%.0f/s)", float64(r.Redriven)/max(elapsed.Seconds(), 1e-3))
	return b.String()
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.printLocked(time.Now())
		fmt.Fprintln(p.w)
	}
}
