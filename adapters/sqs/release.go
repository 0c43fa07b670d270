package sqs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/consumer"
)

// release gives ds back to SQS so another consumer gets them at once, with
// their Attempt unchanged where SQS allows it. Deliveries whose lease was
// lost are skipped: SQS redelivers them already, and their receipt handles
// may no longer be the latest.
//
// SQS counts every receive in ApproximateReceiveCount, and a released
// message was received although no handler ran. On a standard queue each is
// therefore put back as a copy whose oncely-attempt attribute holds its
// Attempt (the copy's receive count starts again), carrying its failure
// context too, and the original is deleted once SQS confirmed the copy. A
// copy that does not fit SQS's size limit, or whose send fails, is released
// by visibility instead, as on a FIFO queue, where a copy would go to the
// back of its message group: visibility 0, so the next receive counts once
// more. A delivery whose settlement was tried and failed (a handler ran) is
// put back with the next attempt number.
func (s *Source) release(ctx context.Context, ds []*delivery) error {
	keep := make([]*delivery, 0, len(ds))
	for _, d := range ds {
		d.stopRenewal()
		if !d.isLost() {
			keep = append(keep, d)
		}
	}
	var errs []error
	visible := keep
	if !s.fifo {
		visible = visible[:0:0]
		for chunk := range chunks(keep, maxBatch) {
			left, err := s.requeue(ctx, chunk)
			visible = append(visible, left...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := s.makeVisible(ctx, visible); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("oncely/sqs: releasing unsettled messages of %s: %w", s.queue, errors.Join(errs...))
	}
	return nil
}

// requeue sends a copy of each of ds (at most ten) to the source queue and
// deletes the originals whose copy SQS confirmed. It returns the deliveries
// it did not copy, to be released by visibility.
func (s *Source) requeue(ctx context.Context, ds []*delivery) (left []*delivery, err error) {
	entries := make([]types.SendMessageBatchRequestEntry, 0, len(ds))
	copied := make([]*delivery, 0, len(ds))
	for _, d := range ds {
		headers := maps.Clone(d.msg.Headers)
		headers[consumer.HeaderAttempt] = strconv.Itoa(d.nextAttempt())
		attrs := packAttributes(d.attrs, headers, s.cfg.IDAttribute)
		if MessageSize(d.body, attrs) > s.maxSize {
			left = append(left, d)
			continue
		}
		entries = append(entries, types.SendMessageBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(len(copied))),
			MessageBody:       aws.String(d.body),
			MessageAttributes: attrs,
		})
		copied = append(copied, d)
	}
	if len(entries) == 0 {
		return left, nil
	}
	out, err := s.client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(s.queueURL), Entries: entries})
	if err != nil {
		return append(left, copied...), fmt.Errorf("putting back copies: %w", err)
	}
	var errs []error
	for _, f := range out.Failed {
		if d := at(copied, f.Id); d != nil {
			left = append(left, d)
			errs = append(errs, fmt.Errorf("copy of %s: %s: %s", d.msg.ID, aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	del := make([]types.DeleteMessageBatchRequestEntry, 0, len(out.Successful))
	for _, ok := range out.Successful {
		if d := at(copied, ok.Id); d != nil {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: ok.Id, ReceiptHandle: aws.String(d.receipt)})
		}
	}
	if len(del) == 0 {
		return left, errors.Join(errs...)
	}
	// A failed delete leaves the original to come back after its
	// visibility timeout besides the copy: a duplicate the idempotency
	// claim absorbs, never a loss.
	dout, err := s.client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.queueURL), Entries: del})
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("deleting %d originals after putting back their copies (they come back after their visibility timeout as duplicates): %w", len(del), err))
	case len(dout.Failed) > 0:
		f := dout.Failed[0]
		errs = append(errs, fmt.Errorf("deleting %d originals after putting back their copies (they come back after their visibility timeout as duplicates): %s: %s", len(dout.Failed), aws.ToString(f.Code), aws.ToString(f.Message)))
	}
	return left, errors.Join(errs...)
}

// at returns ds[id] for a batch entry ID, or nil.
func at(ds []*delivery, id *string) *delivery {
	i, err := strconv.Atoi(aws.ToString(id))
	if err != nil || i < 0 || i >= len(ds) {
		return nil
	}
	return ds[i]
}

// makeVisible sets the visibility of ds to 0.
func (s *Source) makeVisible(ctx context.Context, ds []*delivery) error {
	var errs []error
	for chunk := range chunks(ds, maxBatch) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, 0, len(chunk))
		for i, d := range chunk {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				ReceiptHandle:     aws.String(d.receipt),
				VisibilityTimeout: 0,
			})
		}
		out, err := s.client.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(s.queueURL), Entries: entries})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range out.Failed {
			switch aws.ToString(f.Code) {
			case "ReceiptHandleIsInvalid", "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight":
				// Deleted through another receipt, or already visible:
				// nothing to release.
				continue
			}
			errs = append(errs, fmt.Errorf("entry %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	// The messages not released still reappear once their visibility
	// timeout passes.
	return errors.Join(errs...)
}

func chunks[T any](s []T, n int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}
