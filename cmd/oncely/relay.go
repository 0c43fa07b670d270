package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oncely/oncely/outbox"
)

func runRelay(ctx context.Context, a *app, args []string) error {
	fs := a.flags("relay", "oncely relay --broker URL --database-url URL [--schema oncely] [--no-listen] [--metrics-addr :9090]", `
Publishes the outbox: rows handlers wrote with outbox.Send in their
transactions are published through the broker, confirmed, and only then
marked published. Per (destination, key) order is commit order; several
relays may run at once. Runs until interrupted. Behind PgBouncer in
transaction pooling mode pass --no-listen: the relay then polls.`)
	db := databaseFlags(fs)
	fs.StringVar(db.url, "database", "", "alias of --database-url")
	broker := fs.String("broker", "", "broker URL (default $BROKER_URL; prefer the variable for a URL with a password or token: a command line shows in the process list)")
	noListen := fs.Bool("no-listen", false, "do not LISTEN for notifications; poll only (PgBouncer transaction pooling)")
	poll := fs.Duration("poll", outbox.PollIntervalDefault, "how often to look for rows without a notification")
	workers := fs.Int("workers", outbox.WorkersDefault, "rounds publishing at once (different keys in parallel)")
	batch := fs.Int("batch", outbox.BatchSizeDefault, "most rows per round")
	retention := fs.Duration("retention", outbox.RetentionDefault, "keep published rows this long before deleting them")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (default off)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *poll <= 0 || *workers <= 0 || *batch <= 0 || *retention <= 0 {
		return usagef("relay: --poll, --workers, --batch and --retention must be positive")
	}
	br, err := a.openBroker(ctx, "relay", *broker, nil)
	if err != nil {
		return err
	}
	defer br.Close()
	pool, err := db.open(ctx, a, "relay")
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := prometheus.NewRegistry()
	r, err := outbox.NewRelay(pool, br, outbox.Config{
		Schema: *db.schema, NoListen: *noListen, PollInterval: *poll, Workers: *workers,
		BatchSize: *batch, Retention: *retention, Registerer: reg,
	})
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if *metricsAddr != "" {
		stop, err := serveMetrics(*metricsAddr, reg)
		if err != nil {
			return fmt.Errorf("relay: --metrics-addr: %w", err)
		}
		defer stop()
	}
	fmt.Fprintf(a.stdout, "relaying schema %s to %s (stop with Ctrl-C)\n", *db.schema, br.Kind())
	return r.Run(ctx)
}

// serveMetrics serves reg at addr/metrics until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve ends with ErrServerClosed at stop; a failed listener leaves
		// the relay running without metrics.
		_ = srv.Serve(ln)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
