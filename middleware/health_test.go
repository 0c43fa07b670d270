package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/obstest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/middleware/metrics"
)

func obsGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// obsEventually polls cond every millisecond for up to 10 seconds.
func obsEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHealthReadyFollowsConnectionAndBreaker(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)

	src := obstest.NewSource(1)
	recovered := make(chan struct{})
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		select {
		case <-recovered:
			return nil
		default:
			return consumer.Unavailable(errors.New("database down"))
		}
	})
	cfg := obstest.FastConfig()
	cfg.BreakerThreshold = 1
	cfg.Observer = m.Observer("ledger")
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	c, err := consumer.New(src, h, cfg, m.Middleware)
	require.NoError(t, err)

	var health middleware.Health
	health.Add("ledger", c, src)
	srv := httptest.NewServer(middleware.OpsHandler(metrics.Handler(reg), &health))
	defer srv.Close()
	cl := srv.Client()
	ready := func() (int, string) { return obsGet(t, cl, srv.URL+"/readyz") }

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	code, body := ready()
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "ok\n", body)

	src.SetConnected(false)
	code, body = ready()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "ledger: not connected to the broker\n", body)
	code, body = obsGet(t, cl, srv.URL+"/livez")
	require.Equal(t, http.StatusOK, code, "live while the process runs, whatever the broker does")
	require.Equal(t, "ok\n", body)
	src.SetConnected(true)
	code, _ = ready()
	require.Equal(t, http.StatusOK, code)

	// An outage opens the breaker: not ready until the handler recovers.
	src.Publish(obstest.Msg("a"))
	obsEventually(t, "the breaker opens", c.Paused)
	code, body = ready()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "ledger: breaker open, intake paused\n", body)
	_, metrics := obsGet(t, cl, srv.URL+"/metrics")
	require.Contains(t, metrics, `oncely_breaker_open{consumer="ledger"} 1`)

	close(recovered)
	<-src.Reached()
	obsEventually(t, "the breaker closes", func() bool { return !c.Paused() })
	code, _ = ready()
	require.Equal(t, http.StatusOK, code)
	// The runtime reports the outcome after the ack returns: wait for it.
	obsEventually(t, "the processed message in the metrics", func() bool {
		_, metrics = obsGet(t, cl, srv.URL+"/metrics")
		return strings.Contains(metrics, `oncely_messages_total{consumer="ledger",outcome="processed",source="payments"} 1`)
	})
	require.Contains(t, metrics, `oncely_breaker_open{consumer="ledger"} 0`)

	require.NoError(t, c.Stop(ctx))
	require.NoError(t, <-runErr)
}

func TestHealthWithoutChecks(t *testing.T) {
	var h middleware.Health
	require.NoError(t, h.Ready())
	h.Add("plain", nil, &obsPlainSource{})
	require.NoError(t, h.Ready(), "a source without Connected counts as connected")

	rec := httptest.NewRecorder()
	middleware.OpsHandler(nil, &h).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusNotFound, rec.Code, "no gatherer, no /metrics")
}

// obsPlainSource is a Source that does not implement consumer.Connected.
type obsPlainSource struct{ consumer.Source }

func TestOpsServer(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewRegistry()
	_, err := metrics.New(reg, metrics.Config{Consumer: "ledger"})
	require.NoError(t, err)

	ops, err := middleware.ListenOps("127.0.0.1:0", metrics.Handler(reg), &middleware.Health{})
	require.NoError(t, err)
	addr := ops.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ops.Serve(ctx) }()

	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	code, body := obsGet(t, cl, "http://"+addr+"/metrics") // bound before Serve: answers at once
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.Contains(body, "oncely_breaker_open"), body)
	code, _ = obsGet(t, cl, "http://"+addr+"/readyz")
	require.Equal(t, http.StatusOK, code)

	cancel()
	require.NoError(t, <-done)

	// An address in use is an error at once, from ListenOps: a program
	// learns it at start-up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = middleware.ListenOps(ln.Addr().String(), metrics.Handler(reg), nil)
	require.ErrorContains(t, err, "address already in use")
}

func ExampleHealth() {
	src := &obsPlainSource{} // a Source; one implementing consumer.Connected is asked too
	breaker := &obsBreaker{}
	var health middleware.Health
	health.Add("ledger", breaker, src)
	ops := middleware.OpsHandler(metrics.Handler(prometheus.NewRegistry()), &health)

	get := func(path string) {
		rec := httptest.NewRecorder()
		ops.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Print(path, " ", rec.Code, " ", rec.Body.String())
	}
	get("/readyz")
	breaker.open = true
	get("/readyz")
	get("/livez")
	// Output:
	// /readyz 200 ok
	// /readyz 503 ledger: breaker open, intake paused
	// /livez 200 ok
}

// obsBreaker stands in for a *consumer.Consumer's Paused.
type obsBreaker struct{ open bool }

func (b *obsBreaker) Paused() bool { return b.open }
