package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// renewLinger is how long a visibility extension waits for others to share
// its ChangeMessageVisibilityBatch call. Deliveries received together come
// due together, so batches fill without waiting long.
const renewLinger = 5 * time.Millisecond

// renewal asks to extend d's visibility to ext from now.
type renewal struct {
	d   *delivery
	ext time.Duration
}

// renewer coalesces visibility extensions into ChangeMessageVisibilityBatch
// calls of up to 10 entries and reports each entry's result to its delivery.
type renewer struct {
	s     *Source
	in    chan renewal
	loop  sync.WaitGroup
	calls sync.WaitGroup
}

func newRenewer(s *Source) *renewer {
	r := &renewer{s: s, in: make(chan renewal)}
	r.loop.Go(r.run)
	return r
}

// submit queues rn; when the source is stopping it reports the stop instead.
func (r *renewer) submit(rn renewal) {
	select {
	case r.in <- rn:
	case <-r.s.ctx.Done():
		rn.d.renewed(time.Now(), rn.ext, r.s.ctx.Err(), false)
	}
}

func (r *renewer) run() {
	var batch []renewal
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) > 0 {
			b := batch
			batch = nil
			// Not bounded here: at most one call per ten unsettled
			// deliveries, and a queue of due extensions would only make
			// them late.
			r.calls.Go(func() { r.send(b) })
		}
		timer.Stop()
	}
	for {
		select {
		case rn := <-r.in:
			batch = append(batch, rn)
			switch len(batch) {
			case maxBatch:
				flush()
			case 1:
				timer.Reset(renewLinger)
			}
		case <-timer.C:
			flush()
		case <-r.s.ctx.Done():
			for _, rn := range batch {
				rn.d.renewed(time.Now(), rn.ext, r.s.ctx.Err(), false)
			}
			return
		}
	}
}

func (r *renewer) send(batch []renewal) {
	s := r.s
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
	for i, rn := range batch {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(i)),
			ReceiptHandle:     aws.String(rn.d.receipt),
			VisibilityTimeout: visibilitySeconds(rn.ext),
		}
	}
	// If SQS does not answer within a visibility timeout, the leases are
	// gone anyway.
	ctx, cancel := context.WithTimeout(s.ctx, s.visibility)
	defer cancel()
	sent := time.Now()
	out, err := s.client.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(s.queueURL), Entries: entries})
	if err != nil {
		for _, rn := range batch {
			rn.d.renewed(sent, rn.ext, err, unanswered(err))
		}
		return
	}
	done := make([]bool, len(batch))
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(batch) || done[i] {
			continue
		}
		done[i] = true
		batch[i].d.renewed(sent, batch[i].ext, fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message)), false)
	}
	for i, rn := range batch {
		if !done[i] {
			rn.d.renewed(sent, rn.ext, nil, false)
		}
	}
}

// wait waits for the run loop and the calls in flight; the source's context
// must be cancelled.
func (r *renewer) wait() {
	r.loop.Wait()
	r.calls.Wait()
}

// unanswered reports whether err is a call that got no answer from SQS (no
// API error: a refused or broken connection, a timeout), which may succeed
// when tried again, rather than SQS refusing it.
func unanswered(err error) bool {
	var api smithy.APIError
	return !errors.As(err, &api)
}
