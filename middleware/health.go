package middleware

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Pauser is what Health asks about the breaker; *consumer.Consumer implements
// it.
type Pauser interface {
	// Paused reports whether the breaker has paused intake.
	Paused() bool
}

// Health serves liveness and readiness for the consumers added to it. The
// zero value is ready to use and, with no consumers added, always ready.
type Health struct {
	mu      sync.RWMutex
	targets []healthTarget
}

type healthTarget struct {
	name string
	c    Pauser
	src  consumer.Source
}

// Add makes readiness depend on one consumer: it is ready while c's breaker
// is closed and src, when it implements consumer.Connected, is connected. name
// appears in the /readyz body. c or src may be nil to skip that check.
func (h *Health) Add(name string, c Pauser, src consumer.Source) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.targets = append(h.targets, healthTarget{name: name, c: c, src: src})
}

// Ready returns nil when every added consumer is ready, else an error naming
// each consumer that is not and why.
func (h *Health) Ready() error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var errs []error
	for _, t := range h.targets {
		if cs, ok := t.src.(consumer.Connected); ok && !cs.Connected() {
			errs = append(errs, fmt.Errorf("%s: not connected to the broker", t.name))
		}
		if t.c != nil && t.c.Paused() {
			errs = append(errs, fmt.Errorf("%s: breaker open, intake paused", t.name))
		}
	}
	return errors.Join(errs...)
}

// LiveHandler answers 200 "ok" to every request: the process is up and
// serving. It checks nothing else, so a restart cannot cure what it reports.
func (h *Health) LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
}

// ReadyHandler answers 200 "ok" while Ready returns nil, else 503 with one
// line per problem.
func (h *Health) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := h.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(strings.TrimSpace(err.Error()) + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}

// OpsHandler returns a mux serving GET /metrics with metrics (such as
// metrics.Handler(registry)), and /livez and /readyz from h. A nil metrics
// serves no /metrics; a nil h serves no health endpoints.
func OpsHandler(metrics http.Handler, h *Health) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	if h != nil {
		mux.Handle("GET /livez", h.LiveHandler())
		mux.Handle("GET /readyz", h.ReadyHandler())
	}
	return mux
}

// OpsServer serves OpsHandler's endpoints on a bound address. Make it with
// ListenOps, then call Serve.
type OpsServer struct {
	ln  net.Listener
	srv *http.Server
}

// ListenOps binds addr (such as ":9090") for OpsHandler(metrics, h), and returns
// the error at once when it cannot (the address in use, a bad address), so a
// program fails at start-up instead of running on without its health
// endpoints. Nothing is served until Serve.
func ListenOps(addr string, metrics http.Handler, h *Health) (*OpsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("oncely: ops server: %w", err)
	}
	return &OpsServer{ln: ln, srv: &http.Server{Handler: OpsHandler(metrics, h), ReadHeaderTimeout: 5 * time.Second}}, nil
}

// Addr is the bound address (with the port chosen when addr's was 0).
func (o *OpsServer) Addr() string { return o.ln.Addr().String() }

// Serve serves until ctx is done, then shuts the server down, giving open
// requests up to 5 seconds. It returns nil after a shutdown caused by ctx, or
// the error that stopped the server. Serve may be called once.
func (o *OpsServer) Serve(ctx context.Context) error {
	o.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	done := make(chan error, 1)
	go func() { done <- o.srv.Serve(o.ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("oncely: ops server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := o.srv.Shutdown(sctx)
	<-done
	if err != nil {
		return fmt.Errorf("oncely: ops server shutdown: %w", err)
	}
	return nil
}
