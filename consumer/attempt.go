package consumer

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// process runs one delivery to its settlement, or abandons it: the handler
// chain runs under a context that ends with the delivery's broker lease (if
// any) or the hard stop, and runs again while an outage holds the delivery.
// Every delivery takes this one path, with or without a lease or an
// Observer.
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
	a, ls, done := c.attemptState(w, d)
	defer done()
	observed := c.cfg.Observer != nil
	for outage := 1; ; outage++ {
		if ls.gone() {
			// The lease went before the handler (re)started: running it
			// would let this delivery overtake the one that caused the loss.
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost")})
			c.unheld(outage)
			return
		}
		a.actx.state.reset()
		// The clock is read only to time the handler for the Observer,
		// and then only the monotonic clock (time.Since of a time.Time
		// with a monotonic reading reads nothing else).
		var start, dur time.Duration
		if observed {
			start = time.Since(c.epoch)
		}
		err := handleRecovering(&a.actx, c.handler, msg)
		if observed {
			dur = time.Since(c.epoch) - start
		}
		if !c.settleAttempt(d, msg, a, err, dur, ls, outage) {
			c.unheld(outage)
			return
		}
		if outage == 1 {
			c.breaker.hold() // until process returns (see unheld)
		}
	}
}

// attemptState returns the attempt state d's attempts run on, d's lease
// and a func to call once d is done with them. Without a lease, that is w's
// state, under the hard stop's context. Deliveries of one LeaseContext (a
// Kafka partition) share w's state for that lease, whose context ends with
// the lease; no goroutine or allocation per delivery. A delivery that is
// only Leased gets a state of its own, whose context a goroutine ends when
// the lease is lost.
func (c *Consumer) attemptState(w *worker, d Delivery) (*attempt, lease, func()) {
	if lc, ok := d.(LeaseContexter); ok {
		ls, owned := w.leaseAttempt(c, lc.LeaseContext())
		if owned {
			return &ls.a, lease{flag: &ls.lost}, ls.release
		}
		return &ls.a, lease{flag: &ls.lost}, func() {}
	}
	if l, ok := d.(Leased); ok {
		lost := l.Lost()
		hctx, cancel := context.WithCancel(c.hardCtx)
		go func() {
			select {
			case <-lost:
				cancel()
			case <-hctx.Done():
			}
		}()
		a := &attempt{actx: attemptCtx{Context: hctx, ident: &c.ident}, sctx: settleCtx{Context: c.baseCtx}}
		return a, lease{lost: lost}, cancel
	}
	return &w.a, lease{}, func() {}
}

// lease is a delivery's broker lease as process checks it: the lost flag
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
		if !c.witness(a.actx.state.witnessed()) {
			c.deadLetter(d, msg, ReasonNoClaim, ErrNoClaim, dur)
			return false
		}
		outcome := OutcomeProcessed
		if a.actx.state.has(flagDuplicate) {
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
	if class == ClassUnavailable {
		dep, down := dependency(err)
		if dep == nil || down || c.probe(c.hardCtx, dep) != nil {
			c.breaker.failure(dep, err)
			wait := outageDelay(c.cfg.OutageBackoff, outage)
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
		class = ClassRetryable
	}
	c.breaker.success()
	c.settleFailure(d, msg, err, class, dur)
	return false
}

// settleFailure settles d after its failed attempt err of class (not
// ClassUnavailable: the caller decided it is the message's), which ran
// dur: a dead-letter copy for a permanent failure or once attempts are
// exhausted, else a retry copy.
func (c *Consumer) settleFailure(d Delivery, msg *Message, err error, class Class, dur time.Duration) {
	if class == ClassPermanent {
		c.deadLetter(d, msg, ReasonPermanent, err, dur)
		return
	}
	if c.cfg.Retry.Exhausted(msg.Attempt) {
		reason := ReasonExhausted
		var pe *PanicError
		if errors.As(err, &pe) {
			reason = ReasonPanic
		}
		c.deadLetter(d, msg, reason, err, dur)
		return
	}
	c.retry(d, msg, err, dur)
}

// attempt is one handler call's context and the settlement context of its
// ack, allocated together.
type attempt struct {
	actx attemptCtx
	sctx settleCtx
}

// worker is one worker's attempt state, reused across its deliveries: the
// scheduler runs one delivery at a time on each worker (jobs.run).
type worker struct {
	a      attempt // contexts under c.hardCtx and c.baseCtx
	leases map[context.Context]*leaseState
	// The lease state used last, checked before the map.
	lastLease context.Context
	last      *leaseState
	pruneIn   int // new leases until the full map may be pruned again
}
