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
type progress struct {
	w      io.Writer
	dry    bool
	start  time.Time
	mu     sync.Mutex
	last   time.Time
	latest adapters.RedriveProgress
	shown  bool
}

func newProgress(w io.Writer, dry bool) *progress {
	return &progress{w: w, dry: dry, start: time.Now()}
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
	r := p.latest
	bar := ""
	if r.Total > 0 {
		const width = 30
		filled := min(width, r.Seen*width/r.Total)
		bar = fmt.Sprintf("[%s%s] %d/%d ", strings.Repeat("#", filled), strings.Repeat(".", width-filled), r.Seen, r.Total)
	} else {
		bar = fmt.Sprintf("%d looked at ", r.Seen)
	}
	verb := "redriven"
	if p.dry {
		verb = "would redrive"
	}
	rate := float64(r.Redriven) / max(now.Sub(p.start).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "\r%s%d %s (%.0f/s)", bar, r.Redriven, verb, rate)
	p.shown = true
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.printLocked(time.Now())
		fmt.Fprintln(p.w)
	}
}
