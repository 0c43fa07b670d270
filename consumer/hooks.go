package consumer

import "context"

// Hooks for middleware authors: the values the runtime puts in every
// handler call's context, and the per-attempt state middleware reports back
// to it. Applications need none of these; the adapter-author contracts are
// in source.go (see the package documentation for the whole map).

// NameFromContext returns the consumer name the runtime put in a handler's
// context, or "" outside a Consumer. For middleware authors: idempotency
// stores key claims by it.
//
// For middleware authors (see the package doc).
func NameFromContext(ctx context.Context) string {
	s, _ := ctx.Value(nameKey).(string)
	return s
}

// WithName returns ctx carrying consumer name, as the runtime does for every
// handler call. Use it to call a handler chain directly in tests.
//
// For middleware authors (see the package doc).
func WithName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, nameKey, name)
}

// BrokerFromContext returns the broker name (Capabilities.Broker, such as
// "kafka") the runtime put in a handler's context, or "" outside a Consumer.
// For middleware authors: tracing reports it as messaging.system.
//
// For middleware authors (see the package doc).
func BrokerFromContext(ctx context.Context) string {
	s, _ := ctx.Value(brokerKey).(string)
	return s
}

// WithBroker returns ctx carrying broker name, as the runtime does for every
// handler call. Use it to call a handler chain directly in tests.
//
// For middleware authors (see the package doc).
func WithBroker(ctx context.Context, broker string) context.Context {
	return context.WithValue(ctx, brokerKey, broker)
}

// MarkDuplicate records that the current attempt found the message already
// processed and skipped the handler; the runtime then acks the delivery and
// reports outcome OutcomeDuplicate. For middleware authors: idempotency
// middleware calls it.
//
// For middleware authors (see the package doc).
func MarkDuplicate(ctx context.Context) {
	if s, ok := ctx.Value(stateKey).(*deliveryState); ok {
		s.mark(flagDuplicate)
	}
}

// MarkClaimed records that the message of the current attempt, or every
// message of the current batch, passed through a claim: its (consumer name,
// message ID) key was claimed in the unit of work its handler's effects
// committed in. A Consumer that does not allow duplicates (Config.Duplicates)
// acks a message whose handler returned nil only when MarkClaimed or
// MarkDuplicate was called for its attempt; any other such message is
// dead-lettered with reason ReasonNoClaim (see ErrNoClaim). Outside a
// Consumer it does nothing. For middleware authors: idempotency middleware
// calls it once its store committed the claim.
//
// For middleware authors (see the package doc).
func MarkClaimed(ctx context.Context) {
	if s, ok := ctx.Value(stateKey).(*deliveryState); ok {
		s.mark(flagClaimed)
		return
	}
	if s, ok := ctx.Value(batchKey).(*batchState); ok {
		s.claimed.Store(true)
	}
}

// IsDuplicate reports whether MarkDuplicate was called on ctx's attempt.
// For middleware authors: logging reports such attempts as duplicates.
//
// For middleware authors (see the package doc).
func IsDuplicate(ctx context.Context) bool {
	s, ok := ctx.Value(stateKey).(*deliveryState)
	return ok && s.has(flagDuplicate)
}

// WithAttemptState returns ctx able to record MarkDuplicate and MarkClaimed, as the runtime
// gives each attempt. For middleware authors: use it to call a handler
// chain directly in tests.
//
// For middleware authors (see the package doc).
func WithAttemptState(ctx context.Context) context.Context {
	return &attemptCtx{Context: ctx}
}
