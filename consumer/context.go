package consumer

import (
	"context"
	"sync/atomic"
)

type ctxKey int

const (
	nameKey ctxKey = iota
	stateKey
	brokerKey
	batchKey
)

// deliveryState is per-attempt state that middleware reports to the runtime:
// a set of the attempt flags below.
type deliveryState struct {
	flags atomic.Uint32
}

// Attempt flags of a deliveryState.
const (
	// flagDuplicate: MarkDuplicate; the handler was skipped.
	flagDuplicate uint32 = 1 << iota
	// flagClaimed: MarkClaimed; the message passed through a claim.
	flagClaimed
)

// witnessed reports whether the attempt passed through a claim: it was
// claimed, or found claimed before (a duplicate implies a claim).
func (s *deliveryState) witnessed() bool { return s.flags.Load() != 0 }

func (s *deliveryState) mark(f uint32) { s.flags.Or(f) }

func (s *deliveryState) has(f uint32) bool { return s.flags.Load()&f != 0 }

// reset readies s, reused, for another attempt. It stores only when a flag
// was set: an atomic store costs as much as the rest of a fast attempt's
// runtime work.
func (s *deliveryState) reset() {
	if s.flags.Load() != 0 {
		s.flags.Store(0)
	}
}

// attemptCtx carries an attempt's deliveryState in one allocation. When the
// runtime sets ident, it answers the consumer name and broker itself, as
// middleware asks for them on every message, instead of walking the chain of
// contexts to baseCtx (where the same values are).
type attemptCtx struct {
	context.Context
	state deliveryState
	ident *ctxIdent
}

// ctxIdent is a consumer's name and broker as context values, converted to
// interfaces once so that answering them allocates nothing.
type ctxIdent struct{ name, broker any }

func (c *attemptCtx) Value(key any) any {
	// One type assertion, then integer cases: a switch on key itself
	// compares interfaces case by case.
	if k, ok := key.(ctxKey); ok {
		switch k {
		case stateKey:
			return &c.state
		case nameKey:
			if c.ident != nil {
				return c.ident.name
			}
		case brokerKey:
			if c.ident != nil {
				return c.ident.broker
			}
		}
	}
	return c.Context.Value(key)
}
