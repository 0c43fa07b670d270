package browsertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// pollInterval is how often Poll evaluates its expression.
const pollInterval = 50 * time.Millisecond

// Tab is one browser tab of a test. Its methods fail the test on the first
// error, so they are called from the test's goroutine; a step that needs its
// error (an expected failure) runs on Context with chromedp directly. Every
// action is bounded by the tab's deadline (Config.Timeout from NewTab).
type Tab struct {
	t   testing.TB
	ctx context.Context

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// NewTab opens a tab with the configured viewport and closes it when t ends.
// From its first moment the tab records what its pages write to the
// console, uncaught exceptions and the browser's log (CSP violations among
// them): see Console and Errors.
func (b *Browser) NewTab(t testing.TB) *Tab {
	t.Helper()
	tabCtx, cancelTab := chromedp.NewContext(b.ctx)
	tab := &Tab{t: t}
	// Console opens the tab (the context's first action, without a deadline:
	// one would close the tab when it passed).
	messages := chromedp.Console(tabCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			tab.mu.Lock()
			tab.console = append(tab.console, m)
			tab.mu.Unlock()
		}
	}()
	ctx, cancelTimeout := context.WithTimeout(tabCtx, b.timeout(t))
	tab.ctx = ctx
	t.Cleanup(func() {
		cancelTimeout()
		_ = chromedp.Cancel(tabCtx) // closes the tab and waits for it
		cancelTab()
		<-done
	})
	tab.Do(chromedp.EmulateViewport(int64(b.cfg.Width), int64(b.cfg.Height)))
	return tab
}

// Context is the tab's chromedp context, carrying its deadline: for
// chromedp.Run and chromedp.Do where the test wants the error itself.
func (tab *Tab) Context() context.Context { return tab.ctx }

// Do runs the steps in order and fails the test at the first that fails.
func (tab *Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	tab.t.Helper()
	if err := chromedp.Do(tab.ctx, steps...); err != nil {
		tab.t.Fatalf("browsertest: %v%s", err, tab.diagnosis())
	}
}

// Run runs one action on tab and returns its value, failing the test when it
// fails.
func Run[T any](tab *Tab, a chromedp.Action[T]) T {
	tab.t.Helper()
	v, err := chromedp.Run(tab.ctx, a)
	if err != nil {
		tab.t.Fatalf("browsertest: %v%s", err, tab.diagnosis())
	}
	return v
}

// Navigate loads url, waits for its load event and returns the main
// document's response (its status, headers).
func (tab *Tab) Navigate(url string) *network.Response {
	tab.t.Helper()
	return Run(tab, chromedp.NavigateResponse(url))
}

// WaitFor evaluates the JavaScript expression every 50 ms until it is
// truthy (see Poll): how a test waits for the page to show something, with
// no sleeps.
func (tab *Tab) WaitFor(expr string) {
	tab.t.Helper()
	Poll(tab, "!!("+expr+")", func(ok bool) bool { return ok })
}

// Poll evaluates the JavaScript expression every 50 ms until done accepts
// its value, and returns that value. An evaluation that fails (the page is
// between two documents, say, while it reloads) is tried again. The tab's
// deadline ends the wait, failing the test with the last value or error,
// the page's URL and the start of its text.
func Poll[T any](tab *Tab, expr string, done func(T) bool) T {
	tab.t.Helper()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last string
	for {
		v, err := chromedp.Run(tab.ctx, chromedp.Evaluate[T](expr))
		switch {
		case err == nil && done(v):
			return v
		case err == nil:
			last = fmt.Sprintf("last value %+v", v)
		default:
			last = "last error " + err.Error()
		}
		select {
		case <-tab.ctx.Done():
			tab.t.Fatalf("browsertest: waiting for %s: %v (%s)%s", expr, tab.ctx.Err(), last, tab.diagnosis())
		case <-tick.C:
		}
	}
}

// Console returns what the tab's pages wrote to the console so far, in
// order: console API calls, uncaught exceptions and browser log entries.
func (tab *Tab) Console() []chromedp.ConsoleMessage {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), tab.console...)
}

// Errors returns the console messages of type error or exception so far,
// as text: what a page that works as meant never produces (a script that
// threw, a resource the Content-Security-Policy blocked, a link to a page
// that is not there). The browser's own request for /favicon.ico, which no
// page asked for, is left out.
func (tab *Tab) Errors() []string {
	var errs []string
	for _, m := range tab.Console() {
		if strings.HasSuffix(m.URL, "/favicon.ico") {
			continue
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			errs = append(errs, m.String())
		}
	}
	return errs
}

// diagnosis describes the page for a failure message: its URL, the start of
// its text and the console errors. It uses a fresh short deadline, as the
// tab's may be what passed.
func (tab *Tab) diagnosis() string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(tab.ctx), 2*time.Second)
	defer cancel()
	var b strings.Builder
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		fmt.Fprintf(&b, "\npage: %s", loc)
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`)); err == nil {
		const max = 2000
		if len(text) > max {
			text = text[:max] + "…"
		}
		fmt.Fprintf(&b, "\ntext:\n%s", text)
	}
	if errs := tab.Errors(); len(errs) > 0 {
		fmt.Fprintf(&b, "\nconsole errors:\n%s", strings.Join(errs, "\n"))
	}
	return b.String()
}
