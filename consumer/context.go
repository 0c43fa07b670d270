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
)

// deliveryState is per-attempt state that middleware reports to the runtime.
type deliveryState struct {
	duplicate atomic.Bool
}

// reset readies s, reused, for another attempt. It stores only when
// MarkDuplicate was called: an atomic store costs as much as the rest of a
// fast attempt's runtime work.
func (s *deliveryState) reset() {
	if s.duplicate.Load() {
		s.duplicate.Store(false)
	}
}

// NameFromContext returns the consumer name the runtime put in a handler's
// context, or "" outside a Consumer. Idempotency stores key claims by it.
func NameFromContext(ctx context.Context) string {
	s, _ := ctx.Value(nameKey).(string)
	return s
}

// WithName returns ctx carrying consumer name, as the runtime does for every
// handler call. Use it to call a handler chain directly in tests.
func WithName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, nameKey, name)
}

// BrokerFromContext returns the broker name (Capabilities.Broker, such as
// "kafka") the runtime put in a handler's context, or "" outside a Consumer.
// Tracing middleware reports it as messaging.system.
func BrokerFromContext(ctx context.Context) string {
	s, _ := ctx.Value(brokerKey).(string)
	return s
}

// WithBroker returns ctx carrying broker name, as the runtime does for every
// handler call. Use it to call a handler chain directly in tests.
func WithBroker(ctx context.Context, broker string) context.Context {
	return context.WithValue(ctx, brokerKey, broker)
}

// MarkDuplicate records that the current attempt found the message already
// processed and skipped the handler; the runtime then acks the delivery and
// reports outcome OutcomeDuplicate. Idempotency middleware calls it.
func MarkDuplicate(ctx context.Context) {
	if s, ok := ctx.Value(stateKey).(*deliveryState); ok {
		s.duplicate.Store(true)
	}
}

// IsDuplicate reports whether MarkDuplicate was called on ctx's attempt.
func IsDuplicate(ctx context.Context) bool {
	s, ok := ctx.Value(stateKey).(*deliveryState)
	return ok && s.duplicate.Load()
}

// WithAttemptState returns ctx able to record MarkDuplicate, as the runtime
// gives each attempt. Use it to call a handler chain directly in tests.
func WithAttemptState(ctx context.Context) context.Context {
	return &attemptCtx{Context: ctx}
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
	switch key {
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
	return c.Context.Value(key)
}
