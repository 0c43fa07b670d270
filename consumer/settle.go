package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// retry settles d after its failed attempt err (which ran dur) with a retry
// copy due after the policy's delay — or RetryAfter's, capped to what the
// broker can honour and rounded to the delay it waits (Capabilities.RetryDelay)
// — and dead-letters it as retry-refused when the broker refuses the copy
// while it answers.
func (c *Consumer) retry(d Delivery, msg *Message, err error, dur time.Duration) {
	c.copyOffWorker(func() { c.retryNow(d, msg, err, dur) })
}

// retryNow is retry on the calling goroutine.
func (c *Consumer) retryNow(d Delivery, msg *Message, err error, dur time.Duration) {
	delay := c.cfg.Retry.Delay(msg.Attempt, nil)
	var atLeast time.Duration
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.After > delay {
		delay, atLeast = ra.After, ra.After
	}
	if c.caps.MaxDelay > 0 && delay > c.caps.MaxDelay {
		c.log.Warn("retry delay capped to the broker's maximum", "message_id", msg.ID, "asked", delay.String(), "max", c.caps.MaxDelay.String())
		delay, atLeast = c.caps.MaxDelay, min(atLeast, c.caps.MaxDelay)
	}
	if c.caps.RetryDelay != nil {
		delay = c.caps.RetryDelay(delay, atLeast)
	}
	now := time.Now()
	h := FailureHeaders(msg, Failure{Consumer: c.cfg.Name, Err: err, NextAttempt: msg.Attempt + 1, NotBefore: now.Add(delay), At: now})
	c.log.Info("retrying", "message_id", msg.ID, "attempt", msg.Attempt, "in", delay.String(), "error", err)
	switch ok, refused := c.settle(d, msg, settlement{what: "retry", after: delay, headers: h}); {
	case ok:
		c.observe(Event{Message: msg, Outcome: OutcomeRetried, Err: err, RetryAfter: delay, Duration: dur, Trimmed: trimmed(d)})
	case refused != nil:
		c.deadLetterNow(d, msg, ReasonRetryRefused, fmt.Errorf("%w (retry copy refused: %w)", err, refused), dur)
	}
}

// deadLetter settles d with a dead-letter copy carrying reason and err, off
// the worker (see copyOffWorker).
func (c *Consumer) deadLetter(d Delivery, msg *Message, reason string, err error, dur time.Duration) {
	c.copyOffWorker(func() { c.deadLetterNow(d, msg, reason, err, dur) })
}

// copyOffWorker runs settle, a delivery's retry or dead-letter copy and its
// settlement, on a goroutine of its own, so that a destination that is slow
// or down (a stream or partition leader being elected, a broker refusing
// one topic) holds only the deliveries that need a copy there, never the
// workers every other delivery runs on. The delivery keeps its window slot
// until settle returns: MaxInFlight still bounds deliveries in flight,
// copies included, and a stop drains them like any other. Per-key order is
// not held for the copy: a message retried or dead-lettered through the
// broker gives up its place in its key's order (docs/reliability.md).
// Copies are the failure path; the goroutine and closure are not on the
// path of a message that succeeds. A Source whose Retry keeps the message's
// place (Capabilities.RetryInPlace) settles on the worker: the next
// delivery of the key must not run before it.
func (c *Consumer) copyOffWorker(settle func()) {
	if c.caps.RetryInPlace {
		settle()
		return
	}
	c.window.hold()
	c.copies.Add(1)
	go func() {
		defer c.copies.Done()
		defer c.window.release(1)
		settle()
	}()
}

// deadLetterNow is deadLetter on the calling goroutine.
func (c *Consumer) deadLetterNow(d Delivery, msg *Message, reason string, err error, dur time.Duration) {
	h := FailureHeaders(msg, Failure{Consumer: c.cfg.Name, Err: err, Reason: reason, NextAttempt: msg.Attempt, At: time.Now()})
	c.log.Warn("dead-lettering", "message_id", msg.ID, "attempt", msg.Attempt, "reason", reason, "error", err)
	if ok, _ := c.settle(d, msg, settlement{what: "dead-letter", headers: h}); ok {
		c.observe(Event{Message: msg, Outcome: OutcomeDeadLettered, Err: err, Reason: reason, Duration: dur, Trimmed: trimmed(d)})
	}
}

// settlement is one way to settle a delivery: "ack", "retry" (after,
// headers) or "dead-letter" (headers).
type settlement struct {
	what    string
	after   time.Duration
	headers map[string]string
}

func (s settlement) do(ctx context.Context, d Delivery) error {
	switch s.what {
	case "retry":
		return d.Retry(ctx, s.after, s.headers)
	case "dead-letter":
		return d.DeadLetter(ctx, s.headers)
	}
	return d.Ack(ctx)
}

// ack acknowledges d, on the first try with ctx (reset), and goes on as
// settle does when that fails.
func (c *Consumer) ack(d Delivery, msg *Message, ctx *settleCtx) bool {
	if c.closed.Load() {
		ok, _ := c.settle(d, msg, settlement{what: "ack"})
		return ok
	}
	ctx.init(c.cfg.SettleTimeout)
	err := d.Ack(ctx)
	ctx.cancel()
	if err == nil {
		return true
	}
	if again, _ := c.failed(d, msg, "ack", 1, nil, err); !again {
		return false
	}
	ok, _ := c.settleFrom(d, msg, settlement{what: "ack"}, 2)
	return ok
}

// settle performs s until it succeeds, backing off between tries (see
// failed). It reports whether s succeeded; when it gives up on a retry copy
// the broker refused while it answered, refused is the publish's error, and
// the caller dead-letters the message instead. Otherwise it gives up
// (leaving the delivery unsettled) only on hard stop, a lost lease or a
// closed source.
func (c *Consumer) settle(d Delivery, msg *Message, s settlement) (ok bool, refused error) {
	return c.settleFrom(d, msg, s, 1)
}

// settleFrom is settle from its try'th try on.
func (c *Consumer) settleFrom(d Delivery, msg *Message, s settlement, try int) (ok bool, refused error) {
	held, faults := false, 0
	for ; ; try++ {
		if c.closed.Load() {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: fmt.Errorf("%s: %w", s.what, ErrSourceClosed)})
			return false, nil
		}
		ctx := newSettleCtx(c.baseCtx, c.cfg.SettleTimeout)
		err := s.do(ctx, d)
		ctx.cancel()
		if err == nil {
			return true, nil
		}
		if !held {
			// Held from the first failure to the end (see unheld).
			held = true
			c.breaker.hold()
			defer c.breaker.unhold()
		}
		if again, refused := c.failed(d, msg, s.what, try, &faults, err); !again {
			return false, refused
		}
	}
}

// failed handles the failed try'th try of settling d (what: "ack", "retry"
// or "dead-letter") and reports whether to try again, after backing off.
//
// Who is at fault decides the route. A copy the broker refuses for good
// (ErrCopyRefused), or any failure but an unreachable destination (see
// unreachable) while the Source, probed, answers, is this message's. An
// unreachable destination while the Source answers is that destination's
// outage: the delivery is held and tried again after the outage backoff,
// without counting an attempt or towards the breaker. A retry copy refused for good is given up at once with
// refused set, so the caller dead-letters the message; another retry
// copy failure of the message counts as an attempt (*faults, the
// message's failed copies so far): it is tried again after the retry
// policy's delay while attempts are left, and given up like a refused one
// when they run out. An ack or a dead-letter copy is tried again after the
// outage backoff without counting towards the breaker (an adapter fits
// dead-letter copies to the broker's limits, so this is a last resort that
// never spins). Otherwise the broker is down: the failure counts towards
// the breaker and the delivery is held. A lost lease or the hard stop
// gives up.
func (c *Consumer) failed(d Delivery, msg *Message, what string, try int, faults *int, err error) (again bool, refused error) {
	if errors.Is(err, ErrAlreadySettled) {
		c.log.Error("delivery settled twice; this is an adapter bug", "message_id", msg.ID, "settlement", what)
		return false, nil
	}
	if leaseLost(d) {
		// The broker redelivers it (e.g. an AMQP channel closed); retrying
		// the settlement could never succeed.
		c.log.Warn("broker lease lost before settlement; the broker redelivers the message", "message_id", msg.ID, "settlement", what, "error", err)
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: fmt.Errorf("%s: broker lease lost: %w", what, err)})
		return false, nil
	}
	src, _ := c.src.(Prober)
	answers := src != nil && c.probe(c.hardCtx, src) == nil
	messageFault := errors.Is(err, ErrCopyRefused) || (answers && !unreachable(err))
	wait := outageDelay(c.cfg.OutageBackoff, try)
	if answers && !messageFault {
		// The Source answers but the copy's destination did not (a node
		// leading the retry or dead-letter stream's slot or partition is
		// down): an outage of that place, held like one, without counting
		// an attempt or opening the breaker every other delivery needs.
		c.log.Error("settlement's destination unreachable while the source answers; delivery held and tried again", "message_id", msg.ID, "settlement", what, "error", err, "in", wait.String())
	} else if messageFault && what == "retry" {
		*faults++
		if errors.Is(err, ErrCopyRefused) || c.cfg.Retry.Exhausted(msg.Attempt+*faults) {
			c.log.Error("the broker refused the retry copy while it answers; dead-lettering the message", "message_id", msg.ID, "error", err)
			return false, err
		}
		wait = c.cfg.Retry.Delay(msg.Attempt+*faults, nil)
		c.log.Error("retry copy failed while the broker answers; counted as an attempt, trying again", "message_id", msg.ID, "error", err, "in", wait.String())
	} else if messageFault {
		c.log.Error("settlement failed while the broker answers; trying again", "message_id", msg.ID, "settlement", what, "error", err, "in", wait.String())
	} else {
		c.breaker.failure(src, err)
		c.log.Error("settlement failed; delivery stays unsettled and is tried again", "message_id", msg.ID, "settlement", what, "error", err, "in", wait.String())
	}
	c.observe(Event{Message: msg, Outcome: OutcomeFailed, Err: fmt.Errorf("%s: %w", what, err)})
	if !c.holdFor(wait) {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err})
		return false, nil
	}
	return true, nil
}

// unreachable reports whether err says the settlement never got an answer
// from where it was sent: a network error (a refused dial, a reset or
// closed connection, a timeout) or the settlement's own deadline. Such a
// failure says nothing about the message, only about a place that is down.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

// holdFor holds a delivery through an outage backoff of d, or until the hard
// stop; it reports whether d elapsed.
func (c *Consumer) holdFor(d time.Duration) bool {
	c.breaker.hold()
	defer c.breaker.unhold()
	return sleep(c.hardCtx, d)
}

// unheld ends the hold of a delivery that leaves process at its outage'th
// attempt: one held through an outage (outage > 1) is held no more. A
// delivery counts as held from its first outage failure to its settlement
// or abandonment, its retried attempts included, so the breaker (see
// breaker.probeLoop) never takes a held delivery's running attempt for
// "none left".
func (c *Consumer) unheld(outage int) {
	if outage > 1 {
		c.breaker.unhold()
	}
}

// probe asks dep whether it is up, within Config.ProbeTimeout.
func (c *Consumer) probe(ctx context.Context, dep Prober) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ProbeTimeout)
	defer cancel()
	return dep.Probe(ctx)
}

// dependency returns the Dependency of the outermost UnavailableError in
// err (nil without one) and whether the error shows it down.
func dependency(err error) (Prober, bool) {
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return ue.Dependency, ue.Down
	}
	return nil, false
}

// trimmed reports whether d's adapter trimmed the copy it last published.
func trimmed(d Delivery) bool {
	t, ok := d.(CopyTrimmer)
	return ok && t.CopyTrimmed()
}
