package consumer

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// process runs one delivery to its settlement, or abandons it. A delivery
// without a lease runs on w's reused attempt state (no allocation).
func (c *Consumer) process(w *worker, d Delivery) {
	msg := d.Message()
	if c.hard.Load() {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: context.Canceled})
		return
	}
	if reason, err := checkID(msg.ID, c.cfg.MaxIDLength); err != nil {
		c.deadLetter(d, msg, reason, err, 0)
		return
	}

	if msg.Attempt < 1 {
		msg.Attempt = 1
	}
	if l, ok := d.(Leased); ok {
		c.processLeased(w, d, msg, l)
		return
	}
	if c.cfg.Observer == nil {
		c.handleQuick(w, d, msg)
		return
	}
	c.handle(w, d, msg, nil, nil, lease{}, 1)
}

// processLeased runs a leased delivery, whose handler context ends with the
// lease (or the hard stop).
func (c *Consumer) processLeased(w *worker, d Delivery, msg *Message, l Leased) {
	if lc, ok := d.(LeaseContexter); ok {
		// Deliveries of one lease (a Kafka partition) share a context that
		// ends with the lease or the hard stop; no goroutine or allocation
		// per delivery.
		ls, owned := w.leaseAttempt(c, lc.LeaseContext())
		if owned {
			defer ls.release()
		}
		c.handle(w, d, msg, ls.a.actx.Context, &ls.a, lease{flag: &ls.lost}, 1)
		return
	}
	lost := l.Lost()
	hctx, cancel := context.WithCancel(c.hardCtx)
	defer cancel()
	go func() {
		select {
		case <-lost:
			cancel()
		case <-hctx.Done():
		}
	}()
	c.handle(w, d, msg, hctx, nil, lease{lost: lost}, 1)
}

// lease is a delivery's broker lease as handle checks it: the lost flag
// of its LeaseContext's state on the worker, or else its Lost channel;
// neither for a delivery without a lease.
type lease struct {
	flag *atomic.Bool
	lost <-chan struct{}
}

// gone reports whether the lease was lost; without a lease it costs two
// comparisons.
func (l lease) gone() bool {
	return (l.flag != nil || l.lost != nil) && l.lostNow()
}

func (l lease) lostNow() bool {
	if l.flag != nil {
		return l.flag.Load()
	}
	return isClosed(l.lost)
}

// handle runs the handler chain on msg until its delivery is settled or
// abandoned, holding it through outages, from its outage'th attempt (1
// first). hctx is the handler context (nil: w's attempt state, under
// c.hardCtx), shared the lease's attempt state on w when deliveries share
// it, ls the delivery's lease (zero: none).
func (c *Consumer) handle(w *worker, d Delivery, msg *Message, hctx context.Context, shared *attempt, ls lease, outage int) {
	observed := c.cfg.Observer != nil
	for ; ; outage++ {
		if ls.gone() {
			// The lease went before the handler (re)started: running it
			// would let this delivery overtake the one that caused the loss.
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost")})
			c.unheld(outage)
			return
		}
		// The attempt's context and its ack's settlement context: w's or
		// w's for the lease, reset; or, under a lease without a
		// LeaseContext, one fresh allocation.
		a := &w.a
		switch {
		case shared != nil:
			a = shared
			fallthrough
		case hctx == nil:
			a.actx.state.reset()
		default:
			a = &attempt{actx: attemptCtx{Context: hctx, ident: &c.ident}, sctx: settleCtx{Context: c.baseCtx}}
		}
		// The clock is read only to time the handler for the Observer,
		// and then only the monotonic clock (time.Since of a time.Time
		// with a monotonic reading reads nothing else).
		var start time.Duration
		if observed {
			start = time.Since(c.epoch)
		}
		err := handleRecovering(&a.actx, c.handler, msg)
		var dur time.Duration
		if observed {
			dur = time.Since(c.epoch) - start
		}
		if !c.settleAttempt(d, msg, a, err, dur, ls, outage) {
			c.unheld(outage)
			return
		}
		if outage == 1 {
			c.breaker.hold() // until handle returns (see unheld)
		}
	}
}

// handleQuick is handle for a delivery without a lease while no Observer
// is set, with fewer steps for an attempt that succeeds: no clock, no
// lease, w's attempt state.
func (c *Consumer) handleQuick(w *worker, d Delivery, msg *Message) {
	a := &w.a
	a.actx.state.reset()
	err := handleRecovering(&a.actx, c.handler, msg)
	if err == nil {
		c.breaker.success()
		c.ack(d, msg, &a.sctx)
		return
	}
	if c.settleAttempt(d, msg, a, err, 0, lease{}, 1) {
		c.breaker.hold() // until handle returns (see unheld)
		c.handle(w, d, msg, nil, nil, lease{}, 2)
	}
}

// settleAttempt settles d after its outage'th attempt, which returned err
// after dur, on attempt state a, and reports whether an outage holds d for
// another attempt (once the outage backoff has passed). It abandons d when
// its lease ls was lost, or when the attempt failed during the hard stop.
func (c *Consumer) settleAttempt(d Delivery, msg *Message, a *attempt, err error, dur time.Duration, ls lease, outage int) bool {
	if ls.gone() {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost"), Duration: dur})
		return false
	}
	if err == nil {
		c.breaker.success()
		outcome := OutcomeProcessed
		if a.actx.state.duplicate.Load() {
			outcome = OutcomeDuplicate
		}
		if c.ack(d, msg, &a.sctx) && c.cfg.Observer != nil {
			c.observe(Event{Message: msg, Outcome: outcome, Duration: dur})
		}
		return false
	}
	if c.hard.Load() {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err, Duration: dur})
		return false
	}
	class := c.cfg.Classify(err)
	if class == Outage {
		dep := dependency(err)
		if dep == nil || c.probe(c.hardCtx, dep) != nil {
			c.breaker.failure(dep, err)
			wait := c.cfg.OutageBackoff.Delay(outage, nil)
			c.log.Info("outage: holding delivery and trying again", "message_id", msg.ID, "error", err, "in", wait.String())
			c.observe(Event{Message: msg, Outcome: OutcomeFailed, Err: err, Duration: dur})
			if !c.holdFor(wait) {
				c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err})
				return false
			}
			return true
		}
		// The dependency answers: the failure is this message's.
		c.log.Info("dependency answers; the failure counts as an attempt of this message", "message_id", msg.ID, "error", err)
		class = Retryable
	}
	switch class {
	case Fatal:
		c.breaker.success()
		c.deadLetter(d, msg, ReasonPermanent, err, dur)
	default:
		c.breaker.success()
		if c.cfg.Retry.Exhausted(msg.Attempt) {
			reason := ReasonExhausted
			var pe *PanicError
			if errors.As(err, &pe) {
				reason = ReasonPanic
			}
			c.deadLetter(d, msg, reason, err, dur)
			return false
		}
		c.retry(d, msg, err, dur)
	}
	return false
}

// attempt is one handler call's context and the settlement context of its
// ack, allocated together.
type attempt struct {
	actx attemptCtx
	sctx settleCtx
}
