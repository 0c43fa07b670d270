package consumer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// BatchHandler processes messages a batch at a time, for handlers that apply
// a whole batch with set-based statements. Give one to New in place of a
// Handler: the Consumer then forms batches (see Config.BatchSize and
// Config.BatchMaxWait) and calls HandleBatch. Every broker works the same.
//
// A nil error means every message's effects are done: each is acked. A
// *BatchError (or BatchError) names the messages that failed: the others run
// again as a batch of their own and the named ones are settled one by one,
// each with its own error (retried, then dead-lettered, see Classify). Any
// other error, and a panic, fails the batch as a whole: the runtime then
// bisects it — runs its halves again, each as a batch of its own, until the
// messages that fail stand alone — so a poison message costs its batch-mates
// about 2·log2(n) extra calls and never their acks. A failure that is an
// outage (see Unavailable) holds the whole batch and tries it again without
// bisecting, as for single messages; a RetryAfter error retries every
// message of the batch after its delay, without bisecting.
//
// msgs holds each of its keys' messages in arrival order (see Ordering),
// and no two batches running at once share a key. The slice is the
// handler's only for the call. Handlers must honour ctx: it is cancelled on
// hard stop.
//
// A BatchHandler is also a Handler: Handle runs a batch of one. Middleware
// that wraps one must return a BatchHandler too (see BatchMiddleware's rule in
// New); middleware.Idempotency does, claiming the whole batch at once.
type BatchHandler interface {
	Handler
	HandleBatch(ctx context.Context, msgs []*Message) error
}

// BatchHandlerFunc adapts a plain function to BatchHandler.
type BatchHandlerFunc func(ctx context.Context, msgs []*Message) error

// HandleBatch calls f(ctx, msgs).
func (f BatchHandlerFunc) HandleBatch(ctx context.Context, msgs []*Message) error {
	return f(ctx, msgs)
}

// Handle calls f with a batch of msg alone; a BatchError naming it returns
// msg's own error.
func (f BatchHandlerFunc) Handle(ctx context.Context, msg *Message) error {
	return HandleOne(ctx, f, msg)
}

// HandleOne runs h on a batch of msg alone and returns msg's error: the
// error a BatchError names for it, or h's error. It is the Handle method of a
// BatchHandler built on HandleBatch.
//
// For middleware authors (see the package doc).
func HandleOne(ctx context.Context, h BatchHandler, msg *Message) error {
	err := h.HandleBatch(ctx, []*Message{msg})
	if be, ok := AsBatchError(err); ok {
		if ferr, named := be.Failed[0]; named && len(be.Failed) == 1 {
			return failedWith(ferr)
		}
	}
	return err
}

// BatchError is returned by a BatchHandler whose batch failed for some of
// its messages only. Failed maps the failed messages' positions in the
// handler's msgs to their errors: those messages are settled as failed, each
// with its own error, and the others run again as a batch of their own (their
// effects were rolled back with the failed ones'). A BatchError naming no
// message, or a position outside msgs, fails the whole batch, as any other
// error does. A nil error in Failed counts as a plain failure.
//
// Order: the named messages are settled before the others run again, so a
// named message retried through the broker loses its place in its key's
// order to the batch's later messages of that key (unless the broker retries
// in place, as Kafka's RetryInPlace does). middleware.Retry keeps the place
// while its tries last: it runs the whole batch again in process when every
// named error is retryable.
type BatchError struct {
	Failed map[int]error
}

func (e BatchError) Error() string {
	pos := make([]int, 0, len(e.Failed))
	for i := range e.Failed {
		pos = append(pos, i)
	}
	sort.Ints(pos)
	var b strings.Builder
	fmt.Fprintf(&b, "%d message(s) of the batch failed", len(pos))
	for n, i := range pos {
		if n == 3 {
			fmt.Fprintf(&b, "; and %d more", len(pos)-n)
			break
		}
		fmt.Fprintf(&b, "; [%d]: %s", i, errString(e.Failed[i]))
	}
	return b.String()
}

// AsBatchError reports whether err is, or wraps, a BatchError or *BatchError,
// and returns it.
//
// For middleware authors (see the package doc): a middleware that hands its
// BatchHandler a part of its batch maps the positions back.
func AsBatchError(err error) (BatchError, bool) {
	if err == nil {
		return BatchError{}, false
	}
	var p *BatchError
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	var v BatchError
	if errors.As(err, &v) {
		return v, true
	}
	return BatchError{}, false
}

// errFailedNoReason stands for a nil error in BatchError.Failed.
var errFailedNoReason = errors.New("oncely: the batch handler named this message as failed, with a nil error")

func failedWith(err error) error {
	if err == nil {
		return errFailedNoReason
	}
	return err
}

// MarkDuplicates records that msgs of the batch running under ctx were
// processed before, so their handler was skipped: the runtime acks them with
// outcome OutcomeDuplicate. Outside a batch it does nothing. For middleware
// authors: idempotency middleware calls it.
//
// For middleware authors (see the package doc).
func MarkDuplicates(ctx context.Context, msgs ...*Message) {
	s, ok := ctx.Value(batchKey).(*batchState)
	if !ok || len(msgs) == 0 {
		return
	}
	s.mu.Lock()
	if s.dups == nil {
		s.dups = make(map[*Message]struct{}, len(msgs))
	}
	for _, m := range msgs {
		s.dups[m] = struct{}{}
	}
	s.mu.Unlock()
}

// batchState is one batch call's state that middleware reports back.
type batchState struct {
	mu   sync.Mutex
	dups map[*Message]struct{}
	// claimed: MarkClaimed; the batch passed through a claim.
	claimed atomic.Bool
}

func (s *batchState) duplicate(m *Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.dups[m]
	return ok
}

// batchCtx is one batch call's context: the hard stop's, answering the
// consumer's name and broker and the batch's state.
type batchCtx struct {
	context.Context
	state batchState
	ident *ctxIdent
}

func (c *batchCtx) Value(key any) any {
	if k, ok := key.(ctxKey); ok {
		switch k {
		case batchKey:
			return &c.state
		case nameKey:
			return c.ident.name
		case brokerKey:
			return c.ident.broker
		}
	}
	return c.Context.Value(key)
}
