package sqs

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Close stops intake, waits for the receive calls in flight, sends the
// pending batched deletes, and releases every unsettled delivery (visibility
// set to 0), including what those calls received, so SQS redelivers it at
// once. It is idempotent.
//
// Close waits for the receive calls in flight rather than cancelling them:
// SQS keeps serving a long poll whose caller went away, and the messages it
// takes would stay invisible for a whole visibility timeout, their receive
// count raised. A call ends when a message arrives or after WaitTimeSeconds;
// on a standard queue the unsettled deliveries are put back first, so a call
// in flight ends at once when there were any. Close therefore takes up to
// WaitTimeSeconds (5s by default) only on an idle queue, or a FIFO queue:
// WaitTimeSeconds is the shutdown budget, chosen per Source. The calls run
// on while the runtime drains its handlers, so Stop takes the longer of the
// drain and what is left of the calls, not their sum. When ctx ends first,
// the calls are cancelled and Close returns an error saying messages may
// stay invisible until their visibility timeout.
func (s *Source) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()

	var errs []error
	if !s.fifo {
		// Put back what is unsettled now: a receive call in flight then
		// returns at once with the copies, instead of waiting out its
		// WaitTimeSeconds, and what it took is put back below. (On a
		// FIFO queue the release is by visibility, which such a call
		// would count as a receive.)
		if err := s.release(ctx, s.takeUnsettled()); err != nil {
			errs = append(errs, err)
		}
	}
	if !waitCtx(ctx, &s.calls) {
		s.stopRecv()
		s.calls.Wait()
		errs = append(errs, fmt.Errorf("oncely/sqs: closing %s: receive calls cancelled before they ended (%w): messages SQS handed to them stay invisible until their visibility timeout", s.queue, ctx.Err()))
	}
	s.stopRecv()
	s.cancel()
	s.renewals.wait()
	s.acks.close()
	if err := s.release(ctx, s.takeUnsettled()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// takeUnsettled removes and returns the unsettled deliveries.
func (s *Source) takeUnsettled() []*delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := make([]*delivery, 0, len(s.unsettled))
	for d := range s.unsettled {
		ds = append(ds, d)
	}
	clear(s.unsettled)
	s.buf = nil
	return ds
}

// waitCtx waits for wg and reports true, or reports false when ctx ends
// first.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// kill stops the source as a crash would: no deletes are flushed, nothing is
// released, renewals stop. The messages reappear after their visibility
// timeout. For tests.
func (s *Source) kill() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.killed = true
	close(s.done)
	ds := make([]*delivery, 0, len(s.unsettled))
	for d := range s.unsettled {
		ds = append(ds, d)
	}
	s.mu.Unlock()
	for _, d := range ds {
		d.stopRenewal()
	}
	s.cancel()
	s.stopRecv()
	s.calls.Wait()
	s.renewals.wait()
	s.acks.kill()
}
