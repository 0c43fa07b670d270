package adaptertest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// StopTimeout bounds RunConsumer's graceful stop; past it the stop escalates
// to the hard stop.
const StopTimeout = 60 * time.Second

// RunConsumer runs a consumer.Consumer over src with h, cfg and mws until the
// returned stop is called or the test ends, whichever comes first. stop stops
// the consumer gracefully and fails t when Stop or Run report an error. A nil
// cfg.Logger discards the consumer's logs. Adapter tests count deliveries,
// not effects: a chain without a visible idempotency middleware runs with
// cfg.Duplicates set to consumer.AllowDuplicates, unless cfg.Duplicates was
// set already.
func RunConsumer(t testing.TB, src consumer.Source, h consumer.Handler, cfg consumer.Config, mws ...consumer.Middleware) (c *consumer.Consumer, stop func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	given := cfg.Duplicates
	if !given.Allowed() {
		cfg.Duplicates = consumer.AllowDuplicates("adaptertest: counts deliveries, not effects")
	}
	c, err := consumer.New(src, h, cfg, mws...)
	if errors.Is(err, consumer.ErrOptOutWithIdempotency) && !given.Allowed() {
		cfg.Duplicates = given // the chain deduplicates
		c, err = consumer.New(src, h, cfg, mws...)
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
			defer cancel()
			if err := c.Stop(ctx); err != nil {
				t.Errorf("Stop: %v", err)
			}
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return c, stop
}

// WaitUntil polls cond every 10ms until it holds, and fails t when timeout
// passes first.
func WaitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
