package outbox

import (
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// destHolds are the destinations a relay holds because a round's Publish to
// them failed with no row of theirs passing: each waits out its own jittered
// exponential backoff (BackoffMin to BackoffMax), during which rounds leave
// its rows alone, and is tried again at the first round after. A round in
// which a row of the destination passes releases it and resets its backoff.
// Safe for concurrent use by the relay's workers.
type destHolds struct {
	newBackoff func() *backoff.ExponentialBackOff
	mu         sync.Mutex
	m          map[string]*destHold
}

type destHold struct {
	until time.Time
	bo    *backoff.ExponentialBackOff
}

func newDestHolds(newBackoff func() *backoff.ExponentialBackOff) *destHolds {
	return &destHolds{newBackoff: newBackoff, m: map[string]*destHold{}}
}

// hold holds dest for its next backoff and returns it. held is false when
// dest was already held (a round that claimed its rows before the hold began
// failed too): the hold is left as it is.
func (h *destHolds) hold(dest string, now time.Time) (d time.Duration, held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dh, ok := h.m[dest]
	if !ok {
		dh = &destHold{bo: h.newBackoff()}
		h.m[dest] = dh
	}
	if now.Before(dh.until) {
		return dh.until.Sub(now), false
	}
	d = dh.bo.NextBackOff()
	dh.until = now.Add(d)
	return d, true
}

// release ends dest's hold and resets its backoff, reporting whether dest
// had failed since it last passed.
func (h *destHolds) release(dest string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[dest]
	delete(h.m, dest)
	return ok
}

// held returns the destinations held at now, in no order.
func (h *destHolds) held(now time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ds []string
	for d, dh := range h.m {
		if now.Before(dh.until) {
			ds = append(ds, d)
		}
	}
	return ds
}

// failing is how many destinations failed since they last passed, held or
// due to be tried again.
func (h *destHolds) failing() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}
