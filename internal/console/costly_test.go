package console

import (
	"bytes"
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
)

// heldBroker holds its first DeadLetters call until release is closed,
// after closing entered.
type heldBroker struct {
	adapters.Broker
	once             sync.Once
	entered, release chan struct{}
}

func (b *heldBroker) DeadLetters(ctx context.Context, source, name string, limit int) ([]adapters.DeadLetter, error) {
	first := false
	b.once.Do(func() { first = true })
	if first {
		close(b.entered)
		<-b.release
	}
	return b.Broker.DeadLetters(ctx, source, name, limit)
}

// While one costly page of a client is loading, its next costly page is
// answered 429 at once, with no dead letter read; cheap pages and other
// clients are served; once the first ends, the client is served again.
// The bug it catches: filtered pages anyone can pile up without bound.
func TestCostlyPagesOneAtATimePerClient(t *testing.T) {
	mem := memBroker(t)
	source, name := names()
	seed(t, mem, source, name, []letter{{id: "m1", err: "e"}}, 1)
	br := &heldBroker{Broker: mem, entered: make(chan struct{}), release: make(chan struct{})}
	f := newFixture(t, br, func(c *Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	release := sync.OnceFunc(func() { close(br.release) })
	defer release() // also when the test fails, so that the server can close
	base := consumerURL(source, name)
	f.csrf() // a session first, shared by the requests below
	first := make(chan int, 1)
	go func() {
		resp, err := f.client.Get(f.ts.URL + base + "messages?text=zzz")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-br.entered
	for _, p := range []string{base, base + "messages?text=m", base + "message?id=m1", base + "plan"} {
		resp, err := f.client.Get(f.ts.URL + p)
		require.NoError(t, err)
		body := readBody(t, resp)
		resp.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, p)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.Contains(t, body, "still loading")
		require.NotContains(t, body, "m1</", p)
	}
	require.Equal(t, http.StatusOK, func() int { c, _ := f.get("/jobs"); return c }(), "a cheap page")
	require.Equal(t, http.StatusOK, func() int { c, _ := f.get("/"); return c }(), "the overview")
	// Another client (through the trusted proxy) is served meanwhile.
	req, err := http.NewRequest(http.MethodGet, f.ts.URL+base+"messages", nil)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-For", "192.0.2.5")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-id="m1"`)
	resp.Body.Close()

	release()
	require.Equal(t, http.StatusOK, <-first)
	require.Contains(t, f.page(base+"messages"), `data-id="m1"`)
}

func TestCostlyPagesGlobalCap(t *testing.T) {
	var c costlyPages
	for i := range maxCostlyPages {
		require.True(t, c.acquire(string(rune('a'+i))))
	}
	require.False(t, c.acquire("z"), "past the global cap")
	c.release("a")
	require.False(t, c.acquire("b"), "b still runs one")
	require.True(t, c.acquire("z"))
}

// The text filter searches the first TextSearchLimit bytes of each field:
// a needle past them is not found, whatever the body's size. The bug it
// catches: a filter that reads every byte of every body per request.
func TestTextFilterSearchesBoundedPrefix(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	at := func(off int, needle string) []byte {
		b := bytes.Repeat([]byte("."), 1<<20)
		copy(b[off:], needle)
		return b
	}
	seed(t, br, source, name, []letter{
		{id: "near", body: at(TextSearchLimit-len("needle-x"), "needle-x"), err: "e"},
		{id: "far", body: at(TextSearchLimit+1, "needle-x"), err: "e"},
	}, 2)
	f := newFixture(t, br, nil)
	body := f.page(consumerURL(source, name) + "messages?text=" + url.QueryEscape("NEEDLE-X"))
	require.Contains(t, body, `data-id="near"`)
	require.NotContains(t, body, `data-id="far"`)
}

func TestTextSearchIgnoresCase(t *testing.T) {
	require.True(t, newTextSearch("Needle-X").inString("a NEEDLE-x b"))
	require.True(t, newTextSearch("needle").inBytes([]byte("NeEdLe")))
	require.False(t, newTextSearch("needle").inString("needl"))
	require.True(t, newTextSearch("ÉCOLE").inString("une école"))
	require.True(t, newTextSearch("école").inBytes([]byte("UNE ÉCOLE")))
	require.False(t, newTextSearch("").set())
}
