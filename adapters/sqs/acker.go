package sqs

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/consumer"
)

const (
	// deleteTries is how often one entry of a DeleteMessageBatch is tried
	// before its Ack returns the error (the runtime then tries the Ack
	// again with backoff).
	deleteTries = 3
	// deleteTimeout bounds one DeleteMessageBatch call.
	deleteTimeout = 30 * time.Second
)

// acker coalesces concurrent acks into DeleteMessageBatch calls of up to 10
// entries: a batch is sent when it is full or AckFlushInterval after its
// first entry, and on close.
type acker struct {
	s     *Source
	in    chan *ackRequest
	stop  chan struct{} // closed by kill: drop pending entries
	calls sync.WaitGroup
	loop  sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

type ackRequest struct {
	receipt string
	done    chan error
}

func newAcker(s *Source) *acker {
	a := &acker{s: s, in: make(chan *ackRequest), stop: make(chan struct{})}
	a.loop.Go(a.run)
	return a
}

// delete queues receipt for deletion and waits until it is deleted, its
// deletion failed, or ctx is done.
func (a *acker) delete(ctx context.Context, receipt string) error {
	r := &ackRequest{receipt: receipt, done: make(chan error, 1)}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return consumer.ErrSourceClosed
	}
	// Sending under the lock keeps close from closing a.in under us; run
	// always receives promptly.
	select {
	case a.in <- r:
	case <-ctx.Done():
		a.mu.Unlock()
		return ctx.Err()
	}
	a.mu.Unlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *acker) run() {
	batch := make([]*ackRequest, 0, maxBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) > 0 {
			a.send(batch)
			batch = make([]*ackRequest, 0, maxBatch)
		}
		timer.Stop()
	}
	for {
		select {
		case r, ok := <-a.in:
			if !ok {
				flush()
				return
			}
			batch = append(batch, r)
			switch len(batch) {
			case maxBatch:
				flush()
			case 1:
				timer.Reset(a.s.cfg.AckFlushInterval)
			}
		case <-timer.C:
			flush()
		case <-a.stop:
			for _, r := range batch {
				r.done <- consumer.ErrSourceClosed
			}
			return
		}
	}
}

// send deletes batch in the background. The calls in flight are bounded by
// the runtime's in-flight bound: one per ten unsettled deliveries at most.
func (a *acker) send(batch []*ackRequest) {
	a.calls.Go(func() { a.deleteBatch(batch) })
}

// deleteBatch deletes batch, trying failed entries again up to deleteTries
// times, and answers every request.
func (a *acker) deleteBatch(batch []*ackRequest) {
	s := a.s
	for try := 1; len(batch) > 0; try++ {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
		for i, r := range batch {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.receipt)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		out, err := s.client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.queueURL), Entries: entries})
		cancel()
		if err != nil {
			if try >= deleteTries {
				err = fmt.Errorf("oncely/sqs: deleting acked messages from %s: %w", s.queue, err)
				for _, r := range batch {
					r.done <- err
				}
				return
			}
			s.log.Warn("DeleteMessageBatch failed; trying again", "entries", len(batch), "try", try, "error", err)
			time.Sleep(time.Duration(try) * 50 * time.Millisecond)
			continue
		}
		for _, ok := range out.Successful {
			if r := entry(batch, ok.Id); r != nil {
				r.done <- nil
			}
		}
		var again []*ackRequest
		for _, f := range out.Failed {
			r := entry(batch, f.Id)
			if r == nil {
				continue
			}
			ferr := &DeleteError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}
			if f.SenderFault || try >= deleteTries {
				s.log.Warn("delete of an acked message failed", "error", ferr, "try", try)
				r.done <- ferr
				continue
			}
			s.log.Warn("delete of an acked message failed; trying again", "error", ferr, "try", try)
			again = append(again, r)
		}
		batch = again
		if len(batch) > 0 {
			time.Sleep(time.Duration(try) * 50 * time.Millisecond)
		}
	}
}

func entry(batch []*ackRequest, id *string) *ackRequest {
	i, err := strconv.Atoi(aws.ToString(id))
	if err != nil || i < 0 || i >= len(batch) {
		return nil
	}
	return batch[i]
}

// close sends the pending batch and waits for every delete in flight.
func (a *acker) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.in)
	}
	a.mu.Unlock()
	a.loop.Wait()
	a.calls.Wait()
}

// kill drops the pending batch, as a crash would, and waits for deletes in
// flight.
func (a *acker) kill() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.stop)
	}
	a.mu.Unlock()
	a.loop.Wait()
	a.calls.Wait()
}

// DeleteError is one failed entry of a DeleteMessageBatch call. SenderFault
// errors (such as an expired receipt handle) are not tried again.
type DeleteError struct {
	Code        string
	Message     string
	SenderFault bool
}

func (e *DeleteError) Error() string {
	return fmt.Sprintf("oncely/sqs: delete failed: %s: %s (sender fault: %t)", e.Code, e.Message, e.SenderFault)
}
