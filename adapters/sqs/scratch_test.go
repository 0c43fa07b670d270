package sqs

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type countRT struct {
	mu    sync.Mutex
	n     map[string]int
	dur   map[string]time.Duration
}

func (c *countRT) RoundTrip(r *http.Request) (*http.Response, error) {
	t := r.Header.Get("X-Amz-Target")
	a := t[strings.LastIndexByte(t, '.')+1:]
	s := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(r)
	c.mu.Lock()
	c.n[a]++
	c.dur[a] += time.Since(s)
	c.mu.Unlock()
	return resp, err
}

func BenchmarkScratch(b *testing.B) {
	endpoint, client := emulator(b)
	rt := &countRT{n: map[string]int{}, dur: map[string]time.Duration{}}
	for b.Loop() {
		r := benchRun(b, client, "oncely", func(ctx context.Context, url string) { oncelyConsumerClient(ctx, b, endpoint, url, newTestClient(endpoint, rt)) })
		b.Logf("rate %.0f", r)
		for a, n := range rt.n {
			b.Logf("%s: %d calls, avg %s", a, n, rt.dur[a]/time.Duration(n))
		}
	}
}

func BenchmarkScratchHand(b *testing.B) {
	endpoint, client := emulator(b)
	rt := &countRT{n: map[string]int{}, dur: map[string]time.Duration{}}
	c2 := newTestClient(endpoint, rt)
	for b.Loop() {
		r := benchRun(b, client, "hand", func(ctx context.Context, url string) { handWritten(ctx, b, c2, url) })
		b.Logf("rate %.0f", r)
		for a, n := range rt.n {
			b.Logf("%s: %d calls, avg %s", a, n, rt.dur[a]/time.Duration(n))
		}
	}
}
