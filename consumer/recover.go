package consumer

import (
	"context"
	"runtime/debug"
)

// Recover is middleware that turns a panic in the wrapped handler into a
// *PanicError carrying the panic value and stack. The Consumer always
// recovers outermost (as if Recover wrapped its whole chain), so a panicking
// handler never crashes the process; add Recover inside a chain too where an
// inner middleware (such as in-process retry) must see panics as errors.
// Around a BatchHandler it returns one.
func Recover(next Handler) Handler {
	if bnext, ok := next.(BatchHandler); ok {
		return BatchHandlerFunc(func(ctx context.Context, msgs []*Message) error {
			return handleBatchRecovering(ctx, bnext, msgs)
		})
	}
	return HandlerFunc(func(ctx context.Context, msg *Message) error {
		return handleRecovering(ctx, next, msg)
	})
}

// handleRecovering calls h, turning a panic into a *PanicError.
func handleRecovering(ctx context.Context, h Handler, msg *Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h.Handle(ctx, msg)
}
