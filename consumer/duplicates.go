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
// successful runs, as middleware.Idempotency does. New accepts a chain
// without Config.Duplicates only when one of its middleware returns such a
// handler (or the handler given to New is one), wherever it sits in the
// chain. The mark changes nothing else: the result handles a message exactly
// as h does.
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

// ErrNoIdempotency is returned by New for a handler chain without a
// deduplicating middleware when Config.Duplicates does not allow duplicates.
var ErrNoIdempotency = errors.New("oncely: the handler chain has no idempotency middleware " +
	"(middleware.Idempotency): redelivered messages would apply their effects again; add it, " +
	`or set Config.Duplicates = consumer.AllowDuplicates("why duplicates are harmless here")`)

// ErrNotBatch is returned by New for a BatchHandler wrapped in a middleware
// that handles single messages only: the batch would reach the handler one
// message at a time, or not at all.
var ErrNotBatch = errors.New("oncely: the handler is a BatchHandler but a middleware of its chain does not handle batches " +
	"(every middleware around a BatchHandler must return a BatchHandler, as middleware.Idempotency does)")

// chainDuplicates wraps h in mws as Chain does and checks the result against
// cfg.Duplicates: a chain with a deduplicating handler at any depth needs no
// opt-out, one without needs AllowDuplicates with a reason, and an opt-out
// with a deduplicating chain is a contradiction. It logs an accepted opt-out
// on log at Info.
//
// When h is a BatchHandler, every middleware must return one too: the first
// that does not is reported.
func chainDuplicates(h Handler, cfg Config, log *slog.Logger, mws []Middleware) (Handler, error) {
	_, dedup := h.(deduplicating)
	_, batch := h.(BatchHandler)
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
		if h == nil {
			return nil, fmt.Errorf("oncely: middleware %d of %d returned a nil Handler", i+1, len(mws))
		}
		if _, ok := h.(deduplicating); ok {
			dedup = true
		}
		if _, ok := h.(BatchHandler); batch && !ok {
			return nil, fmt.Errorf("%w: middleware %d of %d (%T) returns a plain Handler", ErrNotBatch, i+1, len(mws), h)
		}
	}
	d := cfg.Duplicates
	switch {
	case d.allowed && strings.TrimSpace(d.reason) == "":
		return nil, errors.New("oncely: Config.Duplicates: AllowDuplicates needs a reason (why are duplicate effects harmless here?)")
	case d.allowed && dedup:
		return nil, errors.New("oncely: Config.Duplicates allows duplicates but the handler chain has an idempotency middleware; drop one of the two")
	case !d.allowed && !dedup:
		return nil, ErrNoIdempotency
	case d.allowed:
		log.Info("duplicates allowed: no idempotency middleware; redelivered messages apply their effects again",
			"duplicates_reason", d.reason)
	}
	return h, nil
}
