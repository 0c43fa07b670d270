package consumer

import "context"

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
// handles a message as a(b(h)).
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
