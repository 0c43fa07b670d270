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
		s.duplicate.Store(true)
	}
}

// IsDuplicate reports whether MarkDuplicate was called on ctx's attempt.
// For middleware authors: logging reports such attempts as duplicates.
//
// For middleware authors (see the package doc).
func IsDuplicate(ctx context.Context) bool {
	s, ok := ctx.Value(stateKey).(*deliveryState)
	return ok && s.duplicate.Load()
}

// WithAttemptState returns ctx able to record MarkDuplicate, as the runtime
// gives each attempt. For middleware authors: use it to call a handler
// chain directly in tests.
//
// For middleware authors (see the package doc).
func WithAttemptState(ctx context.Context) context.Context {
	return &attemptCtx{Context: ctx}
}
