// Package browsertest drives a real browser from Go tests: Debian's Chromium,
// headless, through the DevTools protocol (github.com/chromedp/chromedp).
//
// Start launches one browser for a test and stops it when the test ends;
// NewTab opens a tab whose every action is bounded by one deadline, records
// what the page writes to its console, and fails the test on the first
// action that fails. Screenshot and Shot save PNGs of the viewport.
//
//	b := browsertest.Start(t, browsertest.Config{})
//	tab := b.NewTab(t)
//	tab.Navigate(srv.URL)
//	tab.WaitFor(`document.querySelector("[data-testid=done]") !== null`)
//
// The browser is found by envtest.Chromium (CHROMIUM_PATH, else chromium on
// PATH): under CI=true a missing browser fails the test, elsewhere it skips.
package browsertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oncely/oncely/internal/envtest"
)

// Defaults of Config.
const (
	DefaultTimeout = 45 * time.Second
	DefaultWidth   = 1280
	DefaultHeight  = 800
)

// closeTimeout bounds the graceful close of the browser at the end of a test;
// after it the process is killed.
const closeTimeout = 10 * time.Second

// Config configures Start. The zero value is ready to use.
type Config struct {
	// Path is Chromium's executable. Zero: envtest.Chromium (CHROMIUM_PATH,
	// else chromium on PATH).
	Path string
	// Timeout bounds each tab: its actions fail with
	// context.DeadlineExceeded once this long has passed since NewTab, so a
	// page that never shows what a test waits for ends the test. Zero:
	// DefaultTimeout, or less when the test's own deadline comes sooner.
	Timeout time.Duration
	// Width and Height are the viewport of every tab, in CSS pixels at a
	// device scale factor of 1 (a screenshot has this many pixels). Zero:
	// DefaultWidth and DefaultHeight.
	Width, Height int
}

// Browser is one headless Chromium process belonging to one test. Its tabs
// share the browser's cookies.
type Browser struct {
	cfg Config
	ctx context.Context // the browser's chromedp context (first tab)
}

// Start launches a headless Chromium for t and closes it when t ends,
// waiting for the process to exit: the browser's goroutines are gone when
// the test's cleanups have run. The browser runs without its sandbox only
// when the test runs as root, where Chromium refuses to start otherwise.
func Start(t testing.TB, cfg Config) *Browser {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = envtest.Chromium(t)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Width == 0 {
		cfg.Width = DefaultWidth
	}
	if cfg.Height == 0 {
		cfg.Height = DefaultHeight
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(cfg.Path),
		chromedp.WindowSize(cfg.Width, cfg.Height),
		// The tests serve pages on 127.0.0.1; nothing should be fetched from
		// anywhere else (no component updates, no field trials).
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-pings", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The first action starts the process; its context must have no
	// deadline, which would stop the browser when it passes.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("browsertest: starting %s: %v", cfg.Path, err)
	}
	t.Cleanup(func() {
		closeCtx, cancelClose := context.WithTimeout(ctx, closeTimeout)
		err := chromedp.Cancel(closeCtx)
		cancelClose()
		cancel()
		cancelAlloc() // waits for the process to exit
		if err != nil {
			t.Errorf("browsertest: closing the browser: %v", err)
		}
	})
	return &Browser{cfg: cfg, ctx: ctx}
}

// timeout is the bound of a new tab of t: the configured one, or less when
// t's deadline comes sooner (keeping a few seconds for its cleanups).
func (b *Browser) timeout(t testing.TB) time.Duration {
	d := b.cfg.Timeout
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := tt.Deadline(); ok {
			if left := time.Until(dl) - 5*time.Second; left > 0 && left < d {
				d = left
			}
		}
	}
	return d
}
