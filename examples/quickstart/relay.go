package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/oncely/oncely/adapters"
)

// relay publishes the ledger's pending events to destination and marks them
// published only after Publish returned, i.e. the broker confirmed them. A
// crash between the two leaves an event pending, and it is published again
// with the same ID: at least once, deduplicated by the consumers downstream.
//
// It is the quickstart's stand-in for outbox.Relay (package outbox),
// which does the same from the outbox table, with per-key order across
// relays, backoff, cleanup and metrics.
type relay struct {
	outbox      *ledger
	broker      adapters.Broker
	destination string
	logger      *slog.Logger

	// loseMark names events whose first mark is lost on purpose, as when the
	// relay crashes after Publish returned: they are published twice.
	loseMark map[string]bool

	mu        sync.Mutex
	publishes map[string]int // per event ID
}

// run publishes until ctx is done: a round at once after each commit (the
// ledger's wake) and while rounds find events; on a failed Publish it waits
// and tries again, marking nothing.
func (r *relay) run(ctx context.Context) {
	for {
		n, err := r.round(ctx)
		if ctx.Err() != nil {
			return
		}
		var again <-chan time.Time
		switch {
		case err != nil:
			r.logger.Warn("relay: publish failed; trying again", "error", err)
			again = time.After(100 * time.Millisecond)
		case n > 0:
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-r.outbox.wake:
		case <-again:
		}
	}
}

// round publishes the pending events in one Publish and marks them. It
// returns how many it published.
func (r *relay) round(ctx context.Context) (int, error) {
	msgs := r.outbox.pending()
	if len(msgs) == 0 {
		return 0, nil
	}
	if err := r.broker.Publish(ctx, r.destination, msgs...); err != nil {
		return 0, err // nothing marked: published again next round
	}
	r.mu.Lock()
	ids := make([]string, 0, len(msgs))
	for _, m := range msgs {
		r.publishes[m.ID]++
		if r.loseMark[m.ID] {
			delete(r.loseMark, m.ID)
			continue
		}
		ids = append(ids, m.ID)
	}
	r.mu.Unlock()
	r.outbox.markPublished(ids)
	return len(msgs), nil
}

// published returns how many times each event was published.
func (r *relay) published() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.publishes))
	for id, n := range r.publishes {
		out[id] = n
	}
	return out
}
