package consumer

import (
	"context"
	"fmt"
)

// Handler processes one message. A nil error means the message's effects are
// done and it may be acknowledged. Any other error steers settlement: see
// Permanent, RetryAfter and Unavailable. Handlers must honour ctx: it is
// cancelled on hard stop and when the broker lease is lost.
type Handler interface {
	Handle(ctx context.Context, msg *Message) error
}

// HandlerFunc adapts a plain function to Handler.
type HandlerFunc func(ctx context.Context, msg *Message) error

// Handle calls f(ctx, msg).
func (f HandlerFunc) Handle(ctx context.Context, msg *Message) error { return f(ctx, msg) }

// Middleware wraps a Handler, as in net/http. It is the only middleware shape.
type Middleware func(Handler) Handler

// Chain wraps h with mws so that mws[0] is the outermost: Chain(h, a, b)
// handles a message as a(b(h)). The result keeps what New checks of a
// chain: given to New, or nested in another Chain, it counts as if its
// middleware had been given to New (a deduplicating layer is seen through
// it). Chain panics on a nil middleware, naming its position; New returns
// that as an error instead.
func Chain(h Handler, mws ...Middleware) Handler {
	_, dedup := h.(deduplicating)
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] == nil {
			panic(fmt.Sprintf("consumer.Chain: middleware %d of %d is nil", i+1, len(mws)))
		}
		h = mws[i](h)
		if _, ok := h.(deduplicating); ok {
			dedup = true
		}
	}
	_, batch := h.(BatchHandler)
	switch {
	case h == nil || len(mws) == 0:
		return h
	case dedup:
		if _, ok := h.(deduplicating); ok {
			return h
		}
		return Deduplicating(h)
	case batch:
		return composedBatchHandler{h.(BatchHandler)}
	}
	return composedHandler{h}
}
