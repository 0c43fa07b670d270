package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/middleware/metrics"
)

// observability is the -addr server: Prometheus metrics on /metrics, and
// /livez and /readyz (ready while the broker is connected and the breaker
// closed).
type observability struct {
	addr   string
	name   string
	log    *slog.Logger
	reg    *prometheus.Registry
	rec    *metrics.Recorder
	health middleware.Health
}

func newObservability(addr, name string, log *slog.Logger) (*observability, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(reg, metrics.Config{Consumer: name, Logger: log})
	if err != nil {
		return nil, err
	}
	return &observability{addr: addr, name: name, log: log, reg: reg, rec: m}, nil
}

func (o *observability) observer() consumer.Observer { return o.rec.Observer(o.name) }

func (o *observability) middleware() consumer.Middleware { return o.rec.Middleware }

// start binds the endpoints' address (failing at once when it cannot),
// serves them and polls the backlog until the returned stop function is
// called.
func (o *observability) start(ctx context.Context, c *consumer.Consumer, src consumer.Source) (stop func(), err error) {
	ops, err := middleware.ListenOps(o.addr, metrics.Handler(o.reg), &o.health)
	if err != nil {
		return nil, err
	}
	o.health.Add(o.name, c, src)
	o.rec.Duplicates(o.name, c.Duplicates())
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := ops.Serve(ctx); err != nil {
			o.log.Error("metrics and health server stopped", "addr", o.addr, "error", err)
		}
	})
	if r, ok := src.(consumer.BacklogReporter); ok {
		wg.Go(func() { _ = o.rec.PollBacklog(ctx, r, o.name, 15*time.Second) })
	}
	o.log.Info("serving /metrics, /livez and /readyz", "addr", ops.Addr())
	return func() { cancel(); wg.Wait() }, nil
}
