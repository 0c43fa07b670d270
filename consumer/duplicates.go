package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Duplicates is a consumer's explicit statement about duplicate effects; set
// it as Config.Duplicates. The zero value (the default) allows none: New then
// refuses a handler chain that has no deduplicating middleware (see
// Deduplicating), because at-least-once delivery without one applies a
// redelivered message's effects again. Build the opt-out with
// AllowDuplicates; no other value allows duplicates.
type Duplicates struct {
	allowed bool
	reason  string
}

// AllowDuplicates returns the Duplicates that lets New accept a handler chain
// without an idempotency middleware, for handlers whose effects are
// naturally idempotent (upserts keyed by a business ID) or that accept
// duplicates. reason says why, for the reviewers who grep for
// AllowDuplicates, the start-up log line and the metric label
// (middleware/metrics' oncely_consumer_duplicates_allowed). New refuses an
// empty or blank reason.
func AllowDuplicates(reason string) Duplicates {
	return Duplicates{allowed: true, reason: reason}
}

// Allowed reports whether d is an AllowDuplicates opt-out. It is false for
// the zero value.
func (d Duplicates) Allowed() bool { return d.allowed }

// Reason returns the reason given to AllowDuplicates, or "" for the zero
// value.
func (d Duplicates) Reason() string { return d.reason }

// Duplicates returns the consumer's Config.Duplicates: whether it runs
// without an idempotency middleware, and why. Metrics and health pages
// export it (see middleware/metrics' Recorder.Duplicates).
func (c *Consumer) Duplicates() Duplicates { return c.cfg.Duplicates }

// deduplicating marks a Handler made by Deduplicating.
type deduplicating interface {
	Handler
	deduplicates()
}

type dedupHandler struct{ Handler }

func (dedupHandler) deduplicates() {}

// Deduplicating returns h marked as a deduplicating handler: one that runs
// the handler it wraps at most once per (consumer name, message ID) among
// successful runs and reports each message it let through a claim with
// MarkClaimed, as middleware.Idempotency does. The mark changes nothing
// else: the result handles a message exactly as h does.
//
// The mark tells New that the chain deduplicates where New can see it (see
// New); it proves nothing. Whatever the marks say, a Consumer that does not
// allow duplicates acks only messages that passed through a claim, and
// dead-letters the others with reason ReasonNoClaim.
//
// For middleware authors (see the package doc): only a middleware that does
// deduplicate may mark its handler.
func Deduplicating(h Handler) Handler {
	if h == nil {
		return nil
	}
	if bh, ok := h.(BatchHandler); ok {
		return dedupBatchHandler{bh}
	}
	return dedupHandler{h}
}

// dedupBatchHandler is Deduplicating's mark on a BatchHandler, which stays
// one.
type dedupBatchHandler struct{ BatchHandler }

func (dedupBatchHandler) deduplicates() {}

// composed marks a handler Chain built from middleware none of which was
// seen to deduplicate: New cannot see into those middleware, so it lets the
// per-message witness decide (see New).
type composed interface {
	Handler
	composed()
}

type composedHandler struct{ Handler }

func (composedHandler) composed() {}

type composedBatchHandler struct{ BatchHandler }

func (composedBatchHandler) composed() {}

// ErrNoIdempotency is returned by New for a handler without any middleware
// (neither given to New nor built with Chain) and not itself deduplicating,
// when Config.Duplicates does not allow duplicates.
var ErrNoIdempotency = errors.New("oncely: the handler chain has no idempotency middleware " +
	"(middleware.Idempotency): redelivered messages would apply their effects again; add it, " +
	`or set Config.Duplicates = consumer.AllowDuplicates("why duplicates are harmless here")`)

// ErrOptOutWithIdempotency is returned by New for Config.Duplicates set to
// AllowDuplicates beside a handler chain seen to deduplicate: one of the two
// is a mistake.
var ErrOptOutWithIdempotency = errors.New("oncely: Config.Duplicates allows duplicates but the handler chain has an idempotency middleware; drop one of the two")

// ErrNoClaim is the error of a dead letter with reason ReasonNoClaim: a
// handler returned nil without passing through a claim (MarkClaimed) on a
// Consumer that does not allow duplicates. The chain routes messages around
// its idempotency middleware, or has none: the message's effects, if any,
// are not deduplicated, so the runtime does not ack it as if they were.
var ErrNoClaim = errors.New("oncely: the handler returned without passing through a claim " +
	"(the chain has no idempotency middleware on this message's path); dead-lettered instead of acked " +
	"as deduplicated: fix the chain, or set Config.Duplicates = consumer.AllowDuplicates(reason)")

// ErrNotBatch is returned by New for a BatchHandler wrapped in a middleware
// that handles single messages only: the batch would reach the handler one
// message at a time, or not at all.
var ErrNotBatch = errors.New("oncely: the handler is a BatchHandler but a middleware of its chain does not handle batches " +
	"(every middleware around a BatchHandler must return a BatchHandler, as middleware.Idempotency does)")

// chainShape is what wrapping a handler in middleware showed of it.
type chainShape struct {
	dedup   bool // a layer is marked with Deduplicating
	wrapped bool // a middleware took part, seen or composed by Chain
}

// wrap wraps h in mws as Chain does (mws[0] outermost) and reports the
// chain's shape. It returns an error for a nil middleware or one that
// returned nil, and, when h is a BatchHandler, for the first middleware
// that does not return one (ErrNotBatch).
func wrap(h Handler, mws []Middleware) (Handler, chainShape, error) {
	var sh chainShape
	_, sh.dedup = h.(deduplicating)
	_, sh.wrapped = h.(composed)
	_, batch := h.(BatchHandler)
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] == nil {
			return nil, sh, fmt.Errorf("oncely: middleware %d of %d is nil", i+1, len(mws))
		}
		h = mws[i](h)
		if h == nil {
			return nil, sh, fmt.Errorf("oncely: middleware %d of %d returned a nil Handler", i+1, len(mws))
		}
		sh.wrapped = true
		if _, ok := h.(deduplicating); ok {
			sh.dedup = true
		}
		if _, ok := h.(BatchHandler); batch && !ok {
			return nil, sh, fmt.Errorf("%w: middleware %d of %d (%T) returns a plain Handler", ErrNotBatch, i+1, len(mws), h)
		}
	}
	return h, sh, nil
}

// chainDuplicates wraps h in mws and checks the chain against
// cfg.Duplicates. It refuses what it can prove wrong: an opt-out without a
// reason, an opt-out beside a chain seen to deduplicate, and a handler
// with no middleware at all and no opt-out (ErrNoIdempotency). A chain of
// middleware none of which is seen to deduplicate (a team's own middleware
// may wrap middleware.Idempotency out of sight) is accepted with a warning:
// the per-message witness (Consumer.witness) decides. It logs an accepted
// opt-out on log at Info.
func chainDuplicates(h Handler, cfg Config, log *slog.Logger, mws []Middleware) (Handler, error) {
	h, sh, err := wrap(h, mws)
	if err != nil {
		return nil, err
	}
	d := cfg.Duplicates
	switch {
	case d.allowed && strings.TrimSpace(d.reason) == "":
		return nil, errors.New("oncely: Config.Duplicates: AllowDuplicates needs a reason (why are duplicate effects harmless here?)")
	case d.allowed && sh.dedup:
		return nil, ErrOptOutWithIdempotency
	case !d.allowed && !sh.dedup && !sh.wrapped:
		return nil, ErrNoIdempotency
	case !d.allowed && !sh.dedup:
		log.Warn("no idempotency middleware seen in the handler chain: each message is checked for a claim, and one without is dead-lettered (reason no-claim)")
	case d.allowed:
		log.Info("duplicates allowed: no idempotency middleware; redelivered messages apply their effects again",
			"duplicates_reason", d.reason)
	}
	return h, nil
}

// witness reports whether a message whose handler returned nil may be
// acked, given whether its attempt passed through a claim: always when the
// Consumer allows duplicates, else only with a claim. The first claim seen
// under an opt-out is logged: the opt-out is then wrong, and reported as
// "duplicates allowed" for a consumer that deduplicates.
func (c *Consumer) witness(claimed bool) bool {
	if !c.cfg.Duplicates.allowed {
		if !claimed {
			c.log.Error("handler returned without passing through a claim: dead-lettering (reason no-claim); "+
				"the chain routes messages around its idempotency middleware", "error", ErrNoClaim)
		}
		return claimed
	}
	if claimed && c.claimUnderOptOut.CompareAndSwap(false, true) {
		c.log.Warn("Config.Duplicates allows duplicates, but messages pass through a claim: drop AllowDuplicates")
	}
	return true
}
