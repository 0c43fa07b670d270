package browsertest_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/internal/browsertest"
	"github.com/oncely/oncely/internal/envtest"
)

// TestMain checks no goroutine outlives the tests: each browser, its tabs
// and their console readers are gone once a test's cleanups ran.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const smokePage = `<!doctype html>
<html><head><title>smoke</title>
<style>body{font:16px sans-serif;margin:2em} .box{padding:1em;background:#eef}</style></head>
<body>
<h1 data-testid="title">Harness smoke page</h1>
<div class="box"><button data-testid="go">Go</button> <span data-testid="out">idle</span></div>
<script>
document.querySelector("[data-testid=go]").addEventListener("click", () => {
  // The answer comes later than the click, as a server's would.
  setTimeout(() => { document.querySelector("[data-testid=out]").textContent = "done " + location.pathname; }, 200);
});
console.error("smoke: an error for the console record");
</script>
</body></html>`

// TestSmoke drives a page through the harness: load it, read its text,
// click, wait for the page to change, read its console, take a screenshot.
func TestSmoke(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, smokePage)
	}))
	defer srv.Close()

	b := browsertest.Start(t, browsertest.Config{})
	tab := b.NewTab(t)

	if resp := tab.Navigate(srv.URL + "/page"); resp.Status != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.Status)
	}
	if got := browsertest.Run(tab, chromedp.Text(chromedp.CSS("[data-testid=title]"))); got != "Harness smoke page" {
		t.Fatalf("title text %q", got)
	}
	tab.Do(chromedp.Click(chromedp.CSS("[data-testid=go]")))
	tab.WaitFor(`document.querySelector("[data-testid=out]").textContent === "done /page"`)

	errs := tab.Errors()
	if len(errs) != 1 || !strings.Contains(errs[0], "smoke: an error for the console record") {
		t.Fatalf("console errors %q, want the page's one console.error", errs)
	}

	if resp := tab.Navigate(srv.URL + "/missing"); resp.Status != http.StatusNotFound {
		t.Fatalf("status %d, want 404", resp.Status)
	}
	tab.Navigate(srv.URL + "/page")
	path := filepath.Join(t.TempDir(), "smoke.png")
	n := tab.Screenshot(path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(raw) || n > browsertest.MaxScreenshotBytes {
		t.Fatalf("screenshot of %d bytes (file %d), limit %d", n, len(raw), browsertest.MaxScreenshotBytes)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != browsertest.DefaultWidth || cfg.Height != browsertest.DefaultHeight {
		t.Fatalf("screenshot %dx%d, want %dx%d", cfg.Width, cfg.Height, browsertest.DefaultWidth, browsertest.DefaultHeight)
	}
}

// TestShotOnlyWithEnv: Shot writes into ONCELY_SCREENSHOTS and nothing when
// it is unset.
func TestShotOnlyWithEnv(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, smokePage)
	}))
	defer srv.Close()
	b := browsertest.Start(t, browsertest.Config{Width: 640, Height: 400})
	tab := b.NewTab(t)
	tab.Navigate(srv.URL)

	dir := t.TempDir()
	t.Setenv(browsertest.ScreenshotsEnv, "")
	tab.Shot("off")
	t.Setenv(browsertest.ScreenshotsEnv, filepath.Join(dir, "img"))
	tab.Shot("on")
	if _, err := os.Stat(filepath.Join(dir, "img", "off.png")); !os.IsNotExist(err) {
		t.Fatalf("Shot wrote a file with %s unset: %v", browsertest.ScreenshotsEnv, err)
	}
	f, err := os.Open(filepath.Join(dir, "img", "on.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil || cfg.Width != 640 || cfg.Height != 400 {
		t.Fatalf("on.png: %dx%d, %v; want 640x400", cfg.Width, cfg.Height, err)
	}
}

// TestTabDeadline: a page that never shows what the test waits for ends at
// the tab's deadline, as a failure of the test (checked on a stand-in TB).
func TestTabDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, smokePage)
	}))
	defer srv.Close()
	b := browsertest.Start(t, browsertest.Config{Timeout: 1500 * time.Millisecond})
	tb := &recordTB{TB: t}
	tab := b.NewTab(tb)
	tab.Navigate(srv.URL)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tab.WaitFor(`document.title === "never"`)
	}()
	<-done
	if !tb.failed || !strings.Contains(tb.msg, "deadline exceeded") || !strings.Contains(tb.msg, "Harness smoke page") {
		t.Fatalf("WaitFor past the deadline: failed=%v, message %q; want a failure naming the deadline and the page text", tb.failed, tb.msg)
	}
}

// TestMissingChromium: under CI=true a browser that is not there fails the
// test; elsewhere it skips.
func TestMissingChromium(t *testing.T) {
	t.Setenv("CHROMIUM_PATH", filepath.Join(t.TempDir(), "no-chromium"))
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		tb := &recordTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			envtest.Chromium(tb)
		}()
		<-done
		if ci == "true" && (!tb.failed || tb.skipped) || ci == "" && (tb.failed || !tb.skipped) {
			t.Errorf("CI=%q: failed=%v skipped=%v (%s)", ci, tb.failed, tb.skipped, tb.msg)
		}
		if !strings.Contains(tb.msg, "Chromium") || !strings.Contains(tb.msg, "CHROMIUM_PATH") {
			t.Errorf("CI=%q: message %q names neither Chromium nor CHROMIUM_PATH", ci, tb.msg)
		}
	}
}

// recordTB stands in for a test that is expected to fail or skip: it records
// the outcome and ends the calling goroutine as testing does. Cleanups go to
// the real test.
type recordTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recordTB) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recordTB) Skip(args ...any) {
	r.skipped, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
