package consumer

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncely/oncely/retry"
)

// breaker pauses intake after threshold consecutive outage failures.
//
// It closes on the next success of a held delivery, and, while open, probes
// on its own schedule (half-open): every outage backoff interval it asks the
// dependency that opened it (see Prober) whether it answers, and closes when
// it does. A failure without a dependency to ask (an Unavailable error
// without one, a settlement on a Source that is no Prober) closes it once no
// delivery is held any more, so a breaker whose held deliveries all lost
// their leases resumes intake too. Its waits never exceed the backoff's
// MaxInterval (see outageDelay), so a dependency that answers again is found
// within MaxInterval + ProbeTimeout (a probe under way when it comes back
// may still fail after ProbeTimeout) plus the round trip of the probe that
// finds it up.
type breaker struct {
	dirty       atomic.Bool // consecutive > 0 or open: success and wait must take the lock
	mu          sync.Mutex
	threshold   int
	consecutive int
	open        bool
	changed     chan struct{}
	dep         Prober // the dependency of the last failure, or nil
	cause       error  // the failure that opened the breaker
	openedAt    time.Time
	obs         Observer
	log         *slog.Logger

	held    atomic.Int64 // deliveries waiting out an outage backoff
	backoff retry.Policy
	probe   func(ctx context.Context, p Prober) error
	ctx     context.Context // ends the probe loop; set by start
	loops   sync.WaitGroup
}

func (b *breaker) init(threshold int, backoff retry.Policy, probe func(context.Context, Prober) error, obs Observer, log *slog.Logger) {
	b.threshold = threshold
	b.backoff = backoff
	b.probe = probe
	b.changed = make(chan struct{})
	b.obs = obs
	b.log = log
}

// start sets the context that ends the probe loop; stop ends it and waits.
func (b *breaker) start(ctx context.Context) { b.ctx = ctx }
func (b *breaker) stop()                     { b.loops.Wait() }

// failure counts an outage failure err of dep (nil: none to probe).
func (b *breaker) failure(dep Prober, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consecutive++
	b.dep = dep
	b.dirty.Store(true)
	if !b.open && b.consecutive >= b.threshold {
		b.cause = err
		b.set(true)
		b.loops.Add(1)
		go b.probeLoop(b.changed)
	}
}

// probeLoop probes until the breaker closes (changed is closed) or the
// consumer stops.
func (b *breaker) probeLoop(changed <-chan struct{}) {
	defer b.loops.Done()
	for n := 1; ; n++ {
		t := time.NewTimer(outageDelay(b.backoff, n))
		select {
		case <-changed:
			t.Stop()
			return
		case <-b.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		b.mu.Lock()
		dep := b.dep
		b.mu.Unlock()
		if dep == nil {
			if b.held.Load() == 0 {
				b.reset() // no delivery is held: nothing left to wait for
				return
			}
			continue
		}
		if err := b.probe(b.ctx, dep); err != nil {
			b.log.Debug("breaker: dependency still down", "error", err)
			continue
		}
		b.reset()
		return
	}
}

// outageDelay is p's jittered delay after failure n, never over
// p.MaxInterval: a delay jitter took above it is folded back below it by as
// much (2×MaxInterval − delay), so waits at the cap stay spread out (no herd
// of consumers probing at once) and the resume bound of Config.OutageBackoff
// holds. p must have its defaults (MaxInterval > 0, Jitter < 1).
func outageDelay(p retry.Policy, n int) time.Duration {
	d := p.Delay(n, nil)
	if d > p.MaxInterval {
		d = 2*p.MaxInterval - d
	}
	return d
}

// hold and unhold bracket a delivery's wait in an outage backoff.
func (b *breaker) hold()   { b.held.Add(1) }
func (b *breaker) unhold() { b.held.Add(-1) }

// success records a handled delivery; it costs one atomic load unless
// failures were counted or the breaker is open.
func (b *breaker) success() {
	if b.dirty.Load() {
		b.reset()
	}
}

func (b *breaker) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consecutive = 0
	b.dep = nil
	if b.open {
		b.set(false)
	}
	b.dirty.Store(false) // after closing: a clean breaker is never open
}

// set must be called with mu held. It logs one line per change: the cause
// when the breaker opens, the outage's duration when it closes.
func (b *breaker) set(open bool) {
	b.open = open
	if open {
		b.openedAt = time.Now()
		b.log.Warn("breaker open: intake paused until the dependency answers", "cause", b.cause, "consecutive_failures", b.consecutive)
	} else {
		b.log.Info("breaker closed: intake resumed", "outage", time.Since(b.openedAt).Round(time.Millisecond).String())
	}
	close(b.changed)
	b.changed = make(chan struct{})
	if b.obs != nil {
		b.obs.BreakerChanged(open)
	}
}

// isOpen reports whether intake is paused.
func (b *breaker) isOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}

// wait blocks while the breaker is open; it costs one atomic load while
// no failure is counted.
func (b *breaker) wait(ctx context.Context) error {
	if !b.dirty.Load() {
		return nil
	}
	for {
		b.mu.Lock()
		open, ch := b.open, b.changed
		b.mu.Unlock()
		if !open {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
