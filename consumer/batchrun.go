package consumer

import (
	"context"
	"errors"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// processBatch runs one batch of deliveries, cut by the batch scheduler, to
// their settlements or abandons them. Deliveries with an ID the runtime
// refuses are dead-lettered first, alone, as in process; the others run as
// one batch (runBatch).
func (c *Consumer) processBatch(_ int, ds []Delivery) {
	live := make([]Delivery, 0, len(ds))
	for _, d := range ds {
		msg := d.Message()
		if c.hard.Load() {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: context.Canceled})
			continue
		}
		if reason, err := checkID(msg.ID, c.cfg.MaxIDLength); err != nil {
			c.deadLetter(d, msg, reason, err, 0)
			continue
		}
		if msg.Attempt < 1 {
			msg.Attempt = 1
		}
		live = append(live, d)
	}
	c.runBatch(live)
}

// runBatch calls the BatchHandler on ds until each delivery is settled or
// abandoned:
//
//   - success: every delivery is acked (after the handler returned, so
//     after its transaction committed), each as processed or duplicate;
//   - an outage (an Unavailable error whose dependency does not answer its
//     probe, as in settleAttempt): the whole batch is held and tried again
//     after the outage backoff, never bisected;
//   - a BatchError naming some deliveries: those are settled as failed with
//     their own errors (retry copy, or dead letter), then the others run as
//     a batch of their own;
//   - a RetryAfter error: every delivery is retried no sooner than its
//     delay, without bisecting (the batch asked to be tried later);
//   - any other failure of a batch of one: it is settled as failed;
//   - any other failure: the batch is bisected, its first half run as a
//     batch of its own and then its second, so a lane's deliveries still
//     settle in arrival order. A poison delivery among n so costs at most
//     2·⌈log2 n⌉ more handler calls.
func (c *Consumer) runBatch(ds []Delivery) {
	outage := 1
	defer func() { c.unheld(outage) }()
	for ; ; outage++ {
		ds = c.leased(ds)
		if len(ds) == 0 {
			return
		}
		if c.hard.Load() { // a half of a bisected batch, after the hard stop
			for _, d := range ds {
				c.observe(Event{Message: d.Message(), Outcome: OutcomeAbandoned, Err: context.Canceled})
			}
			return
		}
		msgs := make([]*Message, len(ds))
		for i, d := range ds {
			msgs[i] = d.Message()
		}
		bctx := &batchCtx{Context: c.hardCtx, ident: &c.ident}
		start := time.Now()
		err := handleBatchRecovering(bctx, c.batch, msgs)
		dur := time.Since(start)
		if err == nil {
			c.breaker.success()
			c.ackBatch(ds, &bctx.state, dur)
			return
		}
		if c.hard.Load() {
			for _, m := range msgs {
				c.observe(Event{Message: m, Outcome: OutcomeAbandoned, Err: err, Duration: dur})
			}
			return
		}
		be, named := AsBatchError(err)
		named = named && namesWithin(be, len(ds))
		cause := err
		if named && c.cfg.Classify(err) != ClassUnavailable {
			cause = c.namedOutage(be) // nil: the named failures are the messages'
		}
		if cause != nil && c.cfg.Classify(cause) == ClassUnavailable {
			dep, down := dependency(cause)
			if dep == nil || down || c.probe(c.hardCtx, dep) != nil {
				if !c.holdBatch(msgs, dep, cause, dur, outage) {
					return
				}
				if outage == 1 {
					c.breaker.hold() // until runBatch returns (see unheld)
				}
				continue
			}
			c.log.Info("dependency answers; the failure counts as the batch's", "size", len(ds), "error", cause)
		}
		c.breaker.success()
		switch {
		case named:
			c.settleNamed(ds, be, dur)
		case len(ds) > 1 && isRetryAfter(err):
			// The batch asks to be tried again later: every message of it.
			for i, d := range ds {
				c.settleFailure(d, msgs[i], err, ClassRetryable, dur)
			}
		case len(ds) == 1:
			class := c.cfg.Classify(err)
			if class == ClassUnavailable {
				class = ClassRetryable // its dependency answers (above)
			}
			c.settleFailure(ds[0], msgs[0], err, class, dur)
		default:
			half := (len(ds) + 1) / 2
			c.log.Info("batch failed; bisecting it to isolate the failing messages", "size", len(ds), "error", err)
			c.runBatch(ds[:half])
			c.runBatch(ds[half:])
		}
		return
	}
}

// settleNamed settles the deliveries be names as failed, in arrival order,
// then runs the others as a batch of their own.
func (c *Consumer) settleNamed(ds []Delivery, be BatchError, dur time.Duration) {
	pos := make([]int, 0, len(be.Failed))
	for i := range be.Failed {
		pos = append(pos, i)
	}
	sort.Ints(pos)
	for _, i := range pos {
		err := failedWith(be.Failed[i])
		class := c.cfg.Classify(err)
		if class == ClassUnavailable {
			class = ClassRetryable // namedOutage found its dependency up
		}
		c.settleFailure(ds[i], ds[i].Message(), err, class, dur)
	}
	rest := make([]Delivery, 0, len(ds)-len(pos))
	for i, d := range ds {
		if _, failed := be.Failed[i]; !failed {
			rest = append(rest, d)
		}
	}
	if len(rest) > 0 {
		c.runBatch(rest)
	}
}

// isRetryAfter reports whether err is, or wraps, a *RetryAfterError.
func isRetryAfter(err error) bool {
	var ra *RetryAfterError
	return errors.As(err, &ra)
}

// namesWithin reports whether be names at least one message, all among n.
func namesWithin(be BatchError, n int) bool {
	if len(be.Failed) == 0 {
		return false
	}
	for i := range be.Failed {
		if i < 0 || i >= n {
			return false
		}
	}
	return true
}

// namedOutage returns the first failure be names that is an outage (an
// Unavailable error whose dependency does not answer), or nil when every
// named failure is its message's own.
func (c *Consumer) namedOutage(be BatchError) error {
	probed := map[Prober]bool{}
	for _, err := range be.Failed {
		if err == nil || c.cfg.Classify(err) != ClassUnavailable {
			continue
		}
		dep, down := dependency(err)
		if dep == nil || down {
			return err
		}
		up, seen := probed[dep]
		if !seen {
			up = c.probe(c.hardCtx, dep) == nil
			probed[dep] = up
		}
		if !up {
			return err
		}
	}
	return nil
}

// holdBatch holds a batch through its outage'th outage failure err of dep,
// and reports whether the backoff elapsed (false: the hard stop came, and
// the batch is abandoned).
func (c *Consumer) holdBatch(msgs []*Message, dep Prober, err error, dur time.Duration, outage int) bool {
	c.breaker.failure(dep, err)
	wait := outageDelay(c.cfg.OutageBackoff, outage)
	c.log.Info("outage: holding the batch and trying it again", "size", len(msgs), "error", err, "in", wait.String())
	for _, m := range msgs {
		c.observe(Event{Message: m, Outcome: OutcomeFailed, Err: err, Duration: dur})
	}
	if c.holdFor(wait) {
		return true
	}
	for _, m := range msgs {
		c.observe(Event{Message: m, Outcome: OutcomeAbandoned, Err: err})
	}
	return false
}

// leased returns the deliveries of ds whose broker lease holds, and
// abandons the others: their broker redelivers them.
func (c *Consumer) leased(ds []Delivery) []Delivery {
	for i, d := range ds {
		if !leaseGone(d) {
			continue
		}
		kept := append(make([]Delivery, 0, len(ds)-1), ds[:i]...)
		for _, d := range ds[i:] {
			if leaseGone(d) {
				c.observe(Event{Message: d.Message(), Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost")})
				continue
			}
			kept = append(kept, d)
		}
		return kept
	}
	return ds
}

// leaseGone reports whether d has a broker lease and lost it.
func leaseGone(d Delivery) bool {
	if lc, ok := d.(LeaseContexter); ok {
		return lc.LeaseContext().Err() != nil
	}
	return leaseLost(d)
}

// ackFanOut is the most acks of one batch under way at once. Adapters that
// coalesce acks into one request (SQS's DeleteMessageBatch, of up to 10)
// answer an Ack once its request is sent, so acks made one after another
// would each wait for a request of one.
const ackFanOut = 32

// ackBatch acks the deliveries of a batch that succeeded after dur, each as
// processed or, when st marks it, duplicate.
func (c *Consumer) ackBatch(ds []Delivery, st *batchState, dur time.Duration) {
	ackOne := func(d Delivery, sctx *settleCtx) {
		msg := d.Message()
		if leaseGone(d) {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost"), Duration: dur})
			return
		}
		dup := st.duplicate(msg)
		if !c.witness(dup || st.claimed.Load()) {
			c.deadLetter(d, msg, ReasonNoClaim, ErrNoClaim, dur)
			return
		}
		outcome := OutcomeProcessed
		if dup {
			outcome = OutcomeDuplicate
		}
		if c.ack(d, msg, sctx) && c.cfg.Observer != nil {
			c.observe(Event{Message: msg, Outcome: outcome, Duration: dur})
		}
	}
	if len(ds) == 1 {
		ackOne(ds[0], &settleCtx{Context: c.baseCtx})
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(ds), ackFanOut) {
		wg.Go(func() {
			sctx := &settleCtx{Context: c.baseCtx}
			for i := next.Add(1) - 1; i < int64(len(ds)); i = next.Add(1) - 1 {
				ackOne(ds[i], sctx)
			}
		})
	}
	wg.Wait()
}

// handleBatchRecovering calls h, turning a panic into a *PanicError.
func handleBatchRecovering(ctx context.Context, h BatchHandler, msgs []*Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h.HandleBatch(ctx, msgs)
}
