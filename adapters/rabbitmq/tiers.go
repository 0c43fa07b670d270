package rabbitmq

import (
	"context"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

var _ consumer.TierLimiter = (*Source)(nil)

// LimitTiers bounds the retry queues the Source declares to the tiers a
// retry after at most longest can use (retry.Tiers.Upto of Config.Tiers):
// consumer.New calls it with its policy's reach. It has effect only before
// the tiers are fixed, by the first Receive (or the first early copy parked
// again); without it every tier of Config.Tiers is declared. A longer delay
// (a handler's RetryAfter) waits in the largest tier declared and is parked
// again until due, so it is never early and never lost.
func (src *Source) LimitTiers(longest time.Duration) {
	src.tierMu.Lock()
	defer src.tierMu.Unlock()
	if src.tiers.Load() == nil {
		src.tierLimit, src.tierLimited = longest, true
	}
}

// fixedTiers returns the tiers the Source retries through, fixing them on
// first use: Config.Tiers up to the limit LimitTiers set, else all.
func (src *Source) fixedTiers() retry.Tiers {
	if t := src.tiers.Load(); t != nil {
		return *t
	}
	src.tierMu.Lock()
	defer src.tierMu.Unlock()
	if t := src.tiers.Load(); t != nil {
		return *t
	}
	t := src.cfg.Tiers
	if src.tierLimited {
		t = t.Upto(src.tierLimit)
	}
	src.tiers.Store(&t)
	return t
}

// liveTopo is the topology with the retry tiers fixed so far (none before
// the first Receive): what a connection declares and Backlog reports.
func (src *Source) liveTopo() topology {
	t := src.topo
	t.tiers = nil
	if p := src.tiers.Load(); p != nil {
		t.tiers = *p
	}
	return t
}

// retryQueueFor names the retry queue of the fixed tier for a delay d.
func (src *Source) retryQueueFor(d time.Duration) string {
	t := src.topo
	t.tiers = src.fixedTiers()
	return t.retryQueueFor(d)
}

// declareTiers fixes the tiers and declares their queues once, on the
// current connection; while none is up, the next connection declares them
// (see connect). A queue that exists with other arguments is reported as a
// TopologyError, and Receive tries again.
func (src *Source) declareTiers(ctx context.Context) error {
	if src.tiersDeclared.Load() {
		return nil
	}
	src.fixedTiers()
	src.mu.Lock()
	sess := src.cur
	src.mu.Unlock()
	if sess == nil || sess.isLost() {
		return nil
	}
	d := &declarer{conn: sess.conn, log: src.log, rpc: func(ctx context.Context, what string, fn func() error) error {
		return src.rpc(ctx, sess.conn, what, fn)
	}}
	defer d.close()
	for _, spec := range src.liveTopo().retries() {
		if err := d.queue(ctx, spec, true); err != nil {
			return err
		}
	}
	src.tiersDeclared.Store(true)
	return nil
}
