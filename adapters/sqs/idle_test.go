package sqs

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
)

// pollCounter is an http.RoundTripper that records, for each ReceiveMessage
// call, how many were in flight when it started (itself included).
type pollCounter struct {
	mu       sync.Mutex
	inflight int
	started  []int // in-flight count at each start, in start order
	ended    int
}

func (p *pollCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	poll := strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".ReceiveMessage")
	if poll {
		p.mu.Lock()
		p.inflight++
		p.started = append(p.started, p.inflight)
		p.mu.Unlock()
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if poll {
		p.mu.Lock()
		p.inflight--
		p.ended++
		p.mu.Unlock()
	}
	return resp, err
}

func (p *pollCounter) snapshot() (started []int, ended int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.started...), p.ended
}

// TestIdleOneCall: on an idle queue a Source keeps one receive call in
// flight, not Receivers (an idle queue costs one request per wait, and Close
// has one call to wait for), and goes back to Receivers once a call brings
// messages. Catches: idle calls made Receivers at a time; a Source that
// stays at one call after messages arrive.
func TestIdleOneCall(t *testing.T) {
	endpoint, client := emulator(t)
	polls := &pollCounter{}
	a := newSource(t, endpoint, Config{QueueName: uniqueQueue("idle"), Receivers: 4, Client: newTestClient(endpoint, polls)})
	ctx := testCtx(t, 60*time.Second)

	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		ds, err := a.Receive(ctx, 40)
		got <- result{len(ds), err}
	}()
	// The first four calls find the queue empty; then one at a time.
	adaptertest.WaitUntil(t, 20*time.Second, "six receive calls ended", func() bool {
		_, ended := polls.snapshot()
		return ended >= 6
	})
	started, _ := polls.snapshot()
	require.Equal(t, []int{1, 2, 3, 4}, started[:4], "Receivers calls while the queue was not known to be idle")
	for i, n := range started[4:] {
		require.Equal(t, 1, n, "call %d started with %d in flight on an idle queue", 5+i, n)
	}

	publish(t, client, a.QueueURL(), messages("idle", 40, func(int) string { return "" })...)
	select {
	case r := <-got:
		require.NoError(t, r.err)
		require.Positive(t, r.n)
	case <-ctx.Done():
		t.Fatal("no delivery after publishing")
	}
	a.mu.Lock()
	idle := a.idle
	a.mu.Unlock()
	require.False(t, idle, "a call that brought messages ends the idle spell")
}
