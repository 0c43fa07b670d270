package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/internal/console"
	"github.com/oncely/oncely/internal/pgtest"
)

func TestConsoleRefusesUnsafeSetups(t *testing.T) {
	code, out, _ := cli(t, nil, nil, "--help")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^  console +serve the dead-letter console`, out)
	code, _, errs := cli(t, map[string]string{"ONCELY_CONSOLE_TOKEN": "short"}, nil, "console", "--addr", ":8080")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "too weak: it has 5 characters, want at least 22")
	code, _, errs = cli(t, map[string]string{"ONCELY_CONSOLE_TOKEN": "                "}, nil, "console", "--addr", ":8080")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "too weak")
	code, _, errs = cli(t, map[string]string{"ONCELY_CONSOLE_TOKEN": strings.Repeat("x", 30)}, nil, "console", "--addr", ":8080")
	require.Equal(t, 2, code)
	require.Regexp(t, `too weak: it has 1 different characters.*such as this fresh [A-Za-z0-9_-]{43}, passes`, errs)
	code, _, errs = cli(t, nil, nil, "console", "--tls-cert", "c.pem")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--tls-cert and --tls-key together")
	code, _, errs = cli(t, nil, nil, "console", "--watch", "no-slash")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "want SOURCE/CONSUMER")

	db := pgtest.New(t, pgtest.Options{NoMigrate: true})
	mem := []adapters.Option{adapters.WithMemoryBroker(memory.NewBroker())}
	code, _, errs = cli(t, nil, mem, "console", "--broker", "mem://", "--database-url", db.URL, "--schema", db.Schema)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "run oncely migrate")
}

// signalWriter closes ready on its first write.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() == 0 {
		defer close(w.ready)
	}
	return w.buf.Write(p)
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// oncely console serves the pages on the address it prints and stops
// cleanly on cancel.
func TestConsoleServes(t *testing.T) {
	db := pgtest.New(t)
	b := memory.NewBroker()
	br, err := adapters.Open(t.Context(), "mem://", adapters.WithMemoryBroker(b))
	require.NoError(t, err)
	_, err = br.Source(t.Context(), "payments", "ledger")
	require.NoError(t, err)
	out := &signalWriter{ready: make(chan struct{})}
	a := newApp(out, io.Discard, func(string) string { return "" })
	a.openOpts = []adapters.Option{adapters.WithMemoryBroker(b)}
	a.memoryShared = true
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- a.run(ctx, []string{"console", "--broker", "mem://", "--database-url", db.URL, "--schema", db.Schema,
			"--addr", "127.0.0.1:0", "--watch", "payments/ledger", "--user", "carol", "--read-only"})
	}()
	select {
	case <-out.ready:
	case c := <-code:
		t.Fatalf("console exited with %d: %s", c, out.String())
	}
	m := regexp.MustCompile(`console on (http://127\.0\.0\.1:\d+) \(memory, read-only;`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	resp, err := http.Get(m[1] + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `data-source="payments" data-consumer="ledger"`)
	require.Contains(t, string(body), `data-testid="user">carol<`)
	require.Contains(t, string(body), `data-testid="read-only-badge"`)
	req, err := http.NewRequest(http.MethodGet, m[1]+"/", nil)
	require.NoError(t, err)
	req.Host = "evil.example"
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, "a foreign Host header")
	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c)
	case <-time.After(time.Minute):
		t.Fatal("console did not stop")
	}
}

func TestBoundHosts(t *testing.T) {
	for addr, want := range map[string][]string{"127.0.0.1:8080": nil, "localhost:1": nil, "[::1]:80": nil,
		"10.1.2.3:8080": {"10.1.2.3"}, "console.internal:8080": {"console.internal"}} {
		got, err := boundHosts(addr)
		require.NoError(t, err)
		require.Equal(t, want, got, addr)
	}
	for _, addr := range []string{":8080", "0.0.0.0:8080", "[::]:8080"} {
		got, err := boundHosts(addr)
		require.NoError(t, err)
		for _, h := range got {
			require.NotContains(t, []string{"127.0.0.1", "::1", "0.0.0.0", "::"}, h, addr)
		}
	}
	_, err := boundHosts("no-port")
	require.Error(t, err)
}

// A token over plain HTTP off loopback is warned about at start, unless a
// trusted proxy is named. 192.0.2.1 is not this machine's: the listen
// fails after the warning, and nothing is served.
func TestConsoleWarnsTokenOverPlainHTTP(t *testing.T) {
	db := pgtest.New(t)
	const token = "Zq3-kP9_xW2mR7vT4yB8nL1c"
	broker := os.Getenv("REDIS_URL") // a broker the command may open (it refuses mem://)
	require.NotEmpty(t, broker, "REDIS_URL is not set; run ./scripts/test.sh, which starts Redis")
	args := []string{"console", "--broker", broker, "--database-url", db.URL, "--schema", db.Schema, "--addr", "192.0.2.1:0"}
	code, _, errs := cli(t, map[string]string{"ONCELY_CONSOLE_TOKEN": token}, nil, args...)
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, "level=WARN")
	require.Contains(t, errs, "travel in plain HTTP")
	require.NotContains(t, errs, token)
	code, _, errs = cli(t, map[string]string{"ONCELY_CONSOLE_TOKEN": token}, nil, append(args, "--trusted-proxy", "10.0.0.0/8")...)
	require.Equal(t, 1, code, errs)
	require.NotContains(t, errs, "plain HTTP")
	code, _, errs = cli(t, nil, nil, "console", "--trusted-proxy", "10.0.0.0/99")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "want a CIDR")
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, fmt.Sprintf("tokens-%d", len(text)))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	a, b := strings.Repeat("ab", 32), strings.Repeat("CD", 32)
	got, err := readTokenFile(write("# ops\nann: " + a + "\n\n  ben :" + b + "  \n"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{a: "ann", strings.ToLower(b): "ben"}, got)
	for text, want := range map[string]string{
		"ann " + a:                        ":1: want NAME: SHA256",
		"ann: abc":                        ":1: want NAME: SHA256",
		": " + a:                          ":1: want NAME: SHA256",
		"ann: " + a + "\nbob: " + a:       ":2: bob has the same token as ann",
		"# nothing\n":                     "no tokens",
		"ann: " + strings.Repeat("g", 64): ":1: want NAME",
	} {
		_, err := readTokenFile(write(text))
		require.ErrorContains(t, err, want, text)
	}
	code, _, errs := cli(t, nil, nil, "console", "--addr", ":8080", "--token-file", filepath.Join(dir, "missing"))
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--token-file")
}

// Off loopback without --token or --token-file, oncely console generates
// a token, prints it once to stderr (never to stdout or through the
// logger), and the login takes that token and no other. The bug it
// catches: a console that refuses to start there, or serves it without a
// login.
func TestConsoleGeneratesTokenOffLoopback(t *testing.T) {
	db := pgtest.New(t)
	b := memory.NewBroker()
	out := &signalWriter{ready: make(chan struct{})}
	errs := &signalWriter{ready: make(chan struct{})}
	a := newApp(out, errs, func(string) string { return "" })
	a.openOpts = []adapters.Option{adapters.WithMemoryBroker(b)}
	a.memoryShared = true
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- a.run(ctx, []string{"console", "--broker", "mem://", "--database-url", db.URL, "--schema", db.Schema,
			"--addr", "0.0.0.0:0", "--user", "dave"})
	}()
	select {
	case <-out.ready:
	case c := <-code:
		t.Fatalf("console exited with %d: %s%s", c, out.String(), errs.String())
	}
	m := regexp.MustCompile(`console on http://\S+:(\d+) `).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	base := "http://127.0.0.1:" + m[1]
	tokens := regexp.MustCompile(`shown only now:\n\n    (\S+)\n`).FindAllStringSubmatch(errs.String(), -1)
	require.Len(t, tokens, 1, errs.String())
	token := tokens[0][1]
	require.NoError(t, console.CheckToken(token))
	require.Equal(t, 1, strings.Count(errs.String(), token), "the token is shown once")
	require.NotContains(t, out.String(), token)

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a login is required")
	require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"), resp.Header.Get("Location"))
	resp, err = client.PostForm(base+"/login", url.Values{"token": {console.NewToken()}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "another token")
	resp, err = client.PostForm(base+"/login", url.Values{"token": {token}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the generated token")
	require.NotEmpty(t, resp.Cookies(), "a session cookie")
	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c)
	case <-time.After(time.Minute):
		t.Fatal("console did not stop")
	}
	require.Equal(t, 1, strings.Count(errs.String(), token), "the token is shown once, also at stop")
}
